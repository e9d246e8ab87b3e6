// The pool counters section of report.md: counter deltas over the window per pooled call.
#pragma once

#include <string>
#include <vector>

#include "driver/report/charts.hpp"
#include "driver/report/report_cells.hpp"

namespace knit::bench::report_detail {

void pool_counter_section(md_stream& md, const std::vector<measured_config>& cs,
                          const std::string& profile);

}  // namespace knit::bench::report_detail

// The cost sweep section of report.md: where moving the heavy routes off the event loop
// starts to pay as the extra CPU per heavy call grows.
#pragma once

#include <string>
#include <vector>

#include "driver/report/charts.hpp"
#include "driver/report/report_cells.hpp"

namespace knit::bench::report_detail {

void sweep_section(md_stream& md, const std::vector<measured_config>& cs,
                   const std::string& profile, const std::vector<chart_ref>& charts);

}  // namespace knit::bench::report_detail

// Sections A, B and C of report.md, shaped like the reference benchmark's tables:
// saturating throughput and latency, fixed-rate latency, and what the timer policy is worth.
#pragma once

#include <string>
#include <vector>

#include "driver/report/charts.hpp"
#include "driver/report/report_cells.hpp"

namespace knit::bench::report_detail {

// A: saturating throughput, latency and deeper percentiles of the headline rows.
void section_a(md_stream& md, const std::vector<measured_config>& cs, const config_scope& sat);
// B: latency, server cores and CPU per request at the fixed rate, per route.
void section_b(md_stream& md, const std::vector<measured_config>& cs, const config_scope& rate);
// C: idle cores per timer policy, the full CPU picture, and the old default against the
// default policy.
void section_c(md_stream& md, const std::vector<measured_config>& cs, const config_scope& sat,
               const config_scope& rate);

}  // namespace knit::bench::report_detail

// The hosts sweep section of report.md ("Many event loops"): knit's pool shared by H event
// loops (KNIT_HOSTS) with W workers, against the peers at the same point: H loop-per-core
// inline servers, and H loops sharing one asio::thread_pool(W).
#pragma once

#include <string>
#include <vector>

#include "driver/report/charts.hpp"
#include "driver/report/configs.hpp"

namespace knit::bench::report_detail {

// Heavy throughput: /ssr + /jwt served per second (nullopt when a route is missing).
std::optional<double> heavy_rps(const result_row& r);

// The section for one cost profile, per load mode measured: each configuration's figures by
// (H, W), then each knit row's ratios to inline at H and asio at (H, W), paired by
// repetition as in "knit vs the peers", and the goals it misses. "" when every row of the
// profile ran one host. The charts of section "hosts:PROFILE" follow the tables.
std::string hosts_section(const std::vector<measured_config>& cs, const std::string& profile,
                          const std::vector<chart_ref>& charts);

}  // namespace knit::bench::report_detail

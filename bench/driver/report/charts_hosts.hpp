// The hosts sweep's chart: heavy throughput and /ping p99 against the number of hosts, one
// line per configuration (inline, knit and asio at each worker count), saturating.
#pragma once

#include <string>
#include <vector>

#include "driver/report/chart_script.hpp"

namespace knit::bench::chart_detail {

// Draws charts/hosts_PROFILE.png (section "hosts:PROFILE") when the profile has rows at
// more than one host count; nothing otherwise.
void hosts_charts(const std::vector<measured_config>& cs, const std::string& profile,
                  chart_drawer& d, chart_set& out);

}  // namespace knit::bench::chart_detail

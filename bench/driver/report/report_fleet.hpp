// The fleet section of report.md ("Behind HAProxy"): a knit-server configuration alone and
// the same configuration as N instances behind HAProxy (plan field "fleet"), under the same
// load, and what the balancer adds per request in CPU and in /ping p99.
#pragma once

#include <string>
#include <vector>

#include "driver/report/configs.hpp"

namespace knit::bench::report_detail {

// The section for one cost profile, per load mode measured: each fleet configuration after
// the server alone (same mode, threads, hosts and policy), with its total rps, /ping p99,
// cores and CPU-us/req (the instances and HAProxy together), then the differences from the
// server alone, paired by repetition (median, min–max). "" when no row of the profile ran
// behind HAProxy.
std::string fleet_section(const std::vector<measured_config>& cs, const std::string& profile);

}  // namespace knit::bench::report_detail

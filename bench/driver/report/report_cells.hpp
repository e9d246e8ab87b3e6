// The cells and row selections every section of report.md shares: per-configuration
// medians, labels with their marks, markdown rows, and the rows of the headline tables.
#pragma once

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "driver/report/configs.hpp"

namespace knit::bench::report_detail {

using md_stream = std::ostringstream;

inline const char* const kRoutes[] = {"ping", "ssr", "jwt"};
inline const char* const kForeignMark = " \u26a0";

std::optional<double> opt_d(const std::optional<long long>& v);

// Medians (with min-max) over a configuration's repetitions.
rep_stat idle(const measured_config& c);
rep_stat cores(const measured_config& c);
rep_stat total(const measured_config& c);
rep_stat rps_core(const measured_config& c);
rep_stat cpu_us(const measured_config& c);

// Next to every figure that rests on a window the machine was busy elsewhere during
// (result_row::foreign_flagged), explained by foreign_load_note().
bool any_foreign_flagged(const measured_config& c);
std::string mark(const measured_config& c);
// The label with the routes a partial peer served and the foreign-load mark.
std::string label_of(const measured_config& c);

std::string row(const std::vector<std::string>& cells);
std::string header(const std::vector<std::string>& cells, const std::vector<bool>& right = {});

// The configurations in scope (pooled ones only, if asked) by pool size, then policy.
std::vector<const measured_config*> scoped(const std::vector<measured_config>& cs,
                                           const config_scope& s, bool pooled_only);
// The rows of sections A and B: inline, the default policy at each pool size, knit's auto
// mode, then the peers (asio, multi, external servers), each by thread count.
std::vector<const measured_config*> headline(const std::vector<measured_config>& cs,
                                             const config_scope& s);
// "p50 / p99" of one route.
std::string lat_pair(const measured_config& c, const std::string& route);

}  // namespace knit::bench::report_detail

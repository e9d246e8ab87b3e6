// Runs a whole load test: spreads each route's connections over worker threads, merges results.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "config.hpp"
#include "stats.hpp"

namespace knit_load {

struct route_result {
  route_spec spec;
  route_load_stats stats;
  // Open loop only (target 0 in closed loop).
  double target_rate = 0.0;
  double achieved_rate = 0.0;
  bool rate_met = true;
};

struct run_result {
  std::string host;
  std::uint16_t port = 0;
  double duration_s = 0.0;  // the measured window
  std::uint32_t threads = 1;
  double gen_cpu_s = 0.0;  // this process, user + sys, over the window
  std::vector<route_result> routes;
  double gen_cores() const { return duration_s > 0 ? gen_cpu_s / duration_s : 0.0; }
};

// Runs the test described by `cfg`. With `progress` set, long runs print a line there about
// once a second. Throws std::runtime_error / std::system_error on setup failures.
run_result run_load(const load_config& cfg, std::ostream* progress = nullptr);

}  // namespace knit_load

// Runs a whole load test: spreads each route's connections over worker threads, merges results.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "config.hpp"
#include "stats.hpp"

namespace knit_load {

struct RouteResult {
  RouteSpec spec;
  RouteStats stats;
  // Open loop only (target 0 in closed loop).
  double target_rate = 0.0;
  double achieved_rate = 0.0;
  bool rate_met = true;
};

struct RunResult {
  std::string host;
  std::uint16_t port = 0;
  double duration_s = 0.0;  // the measured window
  std::uint32_t threads = 1;
  double gen_cpu_s = 0.0;   // this process, user + sys, over the window
  std::vector<RouteResult> routes;
  double gen_cores() const { return duration_s > 0 ? gen_cpu_s / duration_s : 0.0; }
};

// Runs the test described by `cfg`. With `progress` set, long runs print a line there about
// once a second. Throws std::runtime_error / std::system_error on setup failures.
RunResult run_load(const Config& cfg, std::ostream* progress = nullptr);

}  // namespace knit_load

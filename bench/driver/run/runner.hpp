// Runs a plan: for every case and repetition, start a server, measure idle CPU,
// warm up, measure a window, stop it; append one row per case and render the report.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "driver/run/case_measure.hpp"
#include "driver/run/case_row.hpp"
#include "driver/run/run_options.hpp"

namespace knit::bench {

// The whole run. Returns the process exit code: 0 all cases measured, 1 some failed,
// 2 bad setup (missing binaries, out dir in use), 3 another driver or stray processes.
int run_benchmark(const run_options& cfg);

// "mm:ss"
std::string clock_text(double seconds);

}  // namespace knit::bench

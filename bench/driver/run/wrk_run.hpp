// The pipelined load: wrk (https://github.com/wg/wrk) sending 16 pipelined GET /plaintext per
// round trip, as TechEmpower's plaintext test does (its wrk runs `pipeline.lua` at depth 16),
// which knit-load cannot. A case with mode "pipelined" runs it instead of knit-load.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "driver/run/load_run.hpp"

namespace knit::bench {

inline constexpr int kPipelineDepth = 16;
// The route a pipelined case loads, and its name in the row's routes.
inline constexpr const char* kPipelinedRoute = "plaintext";

struct wrk_spec {
  std::string exe;  // wrk's path (find_wrk)
  std::string host = "127.0.0.1";
  int port = 3000;
  double duration_s = 5;  // rounded up to whole seconds: wrk takes no fractions
  int threads = 1;
  int conns = 50;           // at least `threads` (wrk refuses fewer)
  std::string script_path;  // write_wrk_script's file
};

// wrk on PATH, or "" when there is none.
std::string find_wrk();

// Writes the Lua script (pipelining, and the JSON line of figures) to `dir`; returns its path.
std::string write_wrk_script(const std::string& dir);

// The exact argv (argv[0] = exe) recorded in the row's load_cmd; its last word is the depth.
std::vector<std::string> wrk_argv(const wrk_spec& spec);

// The figures the script's done() prints in wrk's output, as a load_result with one route,
// "plaintext": every response counted, those over 399 (wrk's "status" errors) not successes;
// of the latencies only max, the slowest batch (from the write of 16 requests to the 16th
// response), and the percentiles 0: wrk's are wrong under pipelining (wrk_run.cpp). Throws
// std::runtime_error when the output holds no such line or the line is not what it prints.
load_result parse_wrk_output(std::string_view output);

// Runs wrk to completion, output to log_path, pinned to cpus (deadline: duration + 30 s);
// gen_cpu_s is the CPU wrk used (the driver's reaped children's, across the run).
load_result run_wrk(const wrk_spec& spec, const std::vector<int>& cpus,
                    const std::string& log_path);

}  // namespace knit::bench

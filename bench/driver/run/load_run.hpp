// knit-load as the driver uses it: the routes and bodies, the command line, running
// it pinned and with a deadline, and reading its JSON.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "driver/system/spawn.hpp"

namespace knit::bench {

struct load_route {
  std::string name;    // "ping"
  std::string method;  // "GET"
  std::string path;    // "/ping"
  int conns = 50;
  double rate = 0;        // requests/s for this route; 0 = closed loop
  std::string body_file;  // sent as application/json; "" = no body
};

// The reference benchmark's three routes: GET /ping, POST /ssr and POST /jwt with its bodies.
std::vector<load_route> standard_routes(int conns, double rate_per_route,
                                        const std::string& body_dir);
// Writes ssr.json and jwt.json (the reference benchmark's bodies) into dir.
void write_bodies(const std::string& dir);
extern const char* const kSsrBody;
extern const char* const kJwtBody;

struct load_spec {
  std::string exe;
  std::string host = "127.0.0.1";
  int port = 3000;
  double duration_s = 5;
  int threads = 0;     // 0 = knit-load's default
  int timeout_ms = 0;  // 0 = knit-load's default
  std::string json_path;
  std::vector<load_route> routes;
};

// The exact argv (argv[0] = exe) recorded in every row.
std::vector<std::string> load_argv(const load_spec& spec);

struct load_route_result {
  double rps = 0;
  double success_rate = 1;
  double requests = 0, successes = 0, errors = 0;
  // Seconds, as knit-load (oha style) reports them.
  double p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0;
  std::map<std::string, double> status_codes;
  std::optional<double> rate_target, rate_achieved;
  std::optional<bool> rate_met;
};

struct load_result {
  double duration_s = 0;
  std::optional<double> gen_cpu_s;
  std::optional<double> gen_cores;
  std::map<std::string, load_route_result> routes;
};

// Parses knit-load's JSON; throws std::runtime_error naming what is missing.
load_result parse_load_json(std::string_view text);

// Runs knit-load to completion (deadline: duration + 30 s, then SIGTERM/SIGKILL by PID),
// output to log_path, pinned to cpus. Throws on a non-zero exit, with the log's tail.
// Ends early (throwing) when the driver is interrupted.
load_result run_load(const load_spec& spec, const std::vector<int>& cpus,
                     const std::string& log_path);

// Runs a load generator to completion: `exe` with `argv` (argv[0] included), the driver's
// environment, pinned to `cpus`, its output to log_path; stopped by PID (SIGTERM, then
// SIGKILL) when it outlives deadline_s or the driver is interrupted, which throws, naming it
// `what`; a non-zero exit throws too, with the tail of log_path. Shared by knit-load and wrk
// (wrk_run.hpp).
void run_generator(const std::string& exe, std::vector<std::string> argv,
                   const std::vector<int>& cpus, const std::string& log_path, double deadline_s,
                   const std::string& what);

// The last `max_bytes` of a file, for error messages.
std::string file_tail(const std::string& path, size_t max_bytes = 800);

}  // namespace knit::bench

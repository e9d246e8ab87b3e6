// Benchmark plans: the list of server configurations to measure, as JSON (the built-in
// plans, bench/plans/*.json, are read by builtin_plans.hpp).
#pragma once

#include <boost/json.hpp>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace knit::bench {

// One configuration to measure. Empty strings mean "leave unset": the server then
// uses its library default, which is how the reference benchmark told "default" rows apart.
struct plan_case {
  std::string tag;  // short name, e.g. "t4" or "inline"
  // "sat" (closed loop) or "rate" (open loop, fixed rate), both knit-load on the three routes;
  // or "pipelined": wrk, closed loop, 16 pipelined GET /plaintext per round trip (wrk_run.hpp).
  std::string mode = "sat";
  // KNIT_MODE: "inline", "pooled", "asio", "multi" or "auto"; or "peer:NAME" for an
  // external server (not knit-server) started from peer_command.
  std::string server_mode = "pooled";
  int threads = 0;  // KNIT_THREADS; 0 = unset
  // KNIT_HOSTS: event-loop threads, each with its own io_context and SO_REUSEPORT listener.
  // 1 (the server's default) leaves the variable unset, so older plans run as before.
  int hosts = 1;
  // Instances of this knit-server configuration behind HAProxy (deploy/fleet.sh run N), all
  // loaded through HAProxy's front port; their CPU and HAProxy's are summed as a process
  // tree. 0 = the server alone, as every other case.
  int fleet = 0;
  std::string spin;                        // KNIT_SPIN in us; "" = unset
  std::string park;                        // KNIT_PARK in ms; "" = unset
  std::string doorbell;                    // KNIT_DOORBELL "0"/"1"; "" = unset
  std::string steal;                       // KNIT_STEAL "0"/"1"; "" = unset
  std::map<std::string, std::string> env;  // further variables, passed verbatim
  std::string cost_profile;                // KNIT_COST_PROFILE "bun"/"native"; "" = unset
  std::optional<int> extra_cost_us;  // sets KNIT_SSR_COST_US and KNIT_JWT_COST_US (cost sweep)
  int conns = 0;                     // connections per route; 0 = the run's default
  double rate_per_route = 0;         // rate mode: offered rps per route; 0 = derive from inline sat
  // External peers only: the /bin/sh -c command ({port} / {host} substituted, PORT and
  // HOST in its environment) and the routes it serves (empty = ping, ssr and jwt).
  std::string peer_command;
  std::vector<std::string> peer_routes;

  bool operator==(const plan_case&) const = default;
};

// Thrown for a plan that cannot be run; what() names the case and the field.
struct plan_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses a JSON array of cases and checks it as a whole (unique tags per mode and
// profile, a reference inline sat case before any rate case that needs one).
std::vector<plan_case> parse_plan(std::string_view json_text);
std::vector<plan_case> load_plan_file(const std::string& path);
boost::json::value case_to_json(const plan_case& c);
boost::json::array plan_to_json(const std::vector<plan_case>& cases);

// The environment a case's server runs with: PORT, HOST, the KNIT_* the case sets,
// JWT_SECRET=x (as the reference benchmark did; a plan's env may override it) and the plan's env.
// The rest of the environment is inherited minus any stray KNIT_* from the caller.
std::map<std::string, std::string> server_env(const plan_case& c, const std::string& host,
                                              int port);

// True for an external peer case (server_mode "peer:NAME").
bool is_peer_case(const plan_case& c);
// The routes a case's load drives: "plaintext" alone for a pipelined case; else peer_routes,
// or all three for knit-server.
std::vector<std::string> case_routes(const plan_case& c);

// Key that groups cases measured against the same inline reference: a rate case
// without an explicit rate offers a fraction of the inline sat total with this key.
std::string reference_key(const plan_case& c);

// How long and how hard a plan's cases are measured: what a built-in plan was sized for,
// and what a run uses once the command line has overridden any of it.
struct plan_sizing {
  double idle_s = 2, warmup_s = 2, window_s = 5;
  int repeat = 1;
  int conns = 50;  // per route, unless the case sets its own
  // Where the generator runs when neither --server-cpus nor --gen-cpus is given: the last
  // gen_cpu_share of the CPUs (at least one), the server on the rest.
  double gen_cpu_share = 0.25;
  // A plan whose figures mean nothing with the generator beside the server (a sweep that
  // fills the server's cores) sets this: the run then refuses CPU sets that overlap.
  bool separate_cpus = false;
};

// Seconds a run of `runs` case repetitions takes: the three phases plus start and stop
// (kSetupS, measured on the 2-CPU machine). Reruns for foreign load come on top.
inline constexpr double kSetupS = 1.5;
double estimate_s(int runs, double idle_s, double warmup_s, double window_s);

}  // namespace knit::bench

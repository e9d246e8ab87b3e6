// One measured case as a row of rows.jsonl: the struct, and its JSON line both ways.
#pragma once

#include <boost/json.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace knit::bench {

// Per-route results. Latencies are milliseconds. Fields the reference rows do not
// carry (p90, p999, max, rate_*) are optional so both schemas read back.
struct route_row_stats {
  double rps = 0;
  double p50 = 0;
  double p99 = 0;
  double ok = 1.0;  // success rate, 0..1
  std::optional<double> p90, p999, max;
  std::optional<double> rate_target;  // rate mode: offered rps for this route
  std::optional<bool> rate_met;       // rate mode: knit-load says the rate was achieved

  bool operator==(const route_row_stats&) const = default;
};

// The reference benchmark's row schema plus what this harness adds. Reference rows have no
// server_mode; it is derived from the tag ("only" = inline) when they are read.
struct result_row {
  // Identity of the configuration.
  std::string tag;
  std::string mode;  // "sat" | "rate" | "pipelined" (wrk, GET /plaintext at depth 16)
  int threads = 0;
  std::string spin;  // reference: "default" = threads*50; ours: "" = unset (library default)
  std::string park;  // reference: "default" = 1 ms;  ours: "" = unset
  std::optional<bool> doorbell;  // null = unset
  std::optional<bool> steal;
  std::string server_mode;  // "inline" | "pooled" | "asio" | "multi" | "auto" | "peer:NAME"
  int hosts = 1;            // KNIT_HOSTS, event loops; rows from before it existed read as 1
  int fleet = 0;  // instances behind HAProxy (plan_case::fleet); 0 (or absent) = the server alone
  std::string cost_profile;  // "" = not recorded (reference rows)
  std::optional<int> extra_cost_us;
  std::map<std::string, std::string> env;  // extra variables from the plan's "env"
  int rep = 0;

  // Measurements, rounded as the reference benchmark's drive.py rounded them.
  double idle_cores = 0;  // 3 decimals
  long long total_rps = 0;
  double cores = 0;  // 2 decimals
  std::optional<long long> rps_per_core;
  std::optional<long long> cpu_us_per_req;
  int os_threads = 0;
  double gen_cores = 0;                           // 2 decimals
  std::map<std::string, route_row_stats> routes;  // "ping", "ssr", "jwt"

  // Context (absent in reference rows).
  std::optional<double> idle_s, warmup_s, window_s;
  std::optional<double> rate_per_route;
  std::optional<int> conns;
  std::map<std::string, double> pool_counters;    // diff of pool.totals over the window
  std::map<std::string, double> pool_per_call;    // each counter per pooled call
  std::map<std::string, double> server_requests;  // diff of the server's request counters
  boost::json::object cpu_layout;                 // {"server_cpus": .., "gen_cpus": ..}
  boost::json::object cpu;                        // raw CPU accounting (ticks and schedstat)
  std::map<std::string, std::string> server_env;
  std::vector<std::string> load_cmd;
  std::optional<long long> server_pid;
  // Trustworthy windows: cores the machine spent outside the server, the generator and the
  // driver over the window (3 decimals), whether that was over the run's limit even after
  // foreign_reruns reruns. Absent in rows from before this was measured.
  std::optional<double> foreign_cores;
  std::optional<bool> foreign_flagged;
  std::optional<int> foreign_reruns;
  // External peers (server_mode "peer:NAME"): the command as run and the processes of its
  // tree at the window's end. Their rows have no knit-stats, so pool_counters, pool_per_call
  // and server_requests are written as null.
  std::optional<std::string> peer_command;
  // The mode knit-server's knit-stats line reported (absent for peers and older rows); a
  // value other than server_mode means the server did not run the mode the row is named for.
  std::optional<std::string> reported_mode;
  // How many hosts knit-stats listed ("hosts": [...]); absent when it listed none (a server
  // from before KNIT_HOSTS, a peer). Differing from hosts means the server ran another count.
  std::optional<int> reported_hosts;
  std::optional<int> peer_processes;

  // Keys this version does not know, kept so a round trip loses nothing.
  boost::json::object unknown;

  bool operator==(const result_row&) const = default;
};

// result_row -> one JSON line (no trailing newline). Reference keys come first, in their order.
std::string row_to_json_line(const result_row& r);
boost::json::object row_to_json(const result_row& r);

// JSON line -> result_row. Accepts both the reference rows and ours; throws std::runtime_error
// naming the field on anything it cannot read.
result_row row_from_json(const boost::json::value& v);
result_row row_from_json_line(std::string_view line);

// Reads a rows.jsonl; blank lines are skipped, bad lines throw with their line number.
std::vector<result_row> read_rows_file(const std::string& path);
void append_row_file(const std::string& path, const result_row& r);

// True when the row came from the reference benchmark's schema (or mimics it): spin/park "default".
bool is_reference_schema(const result_row& r);

}  // namespace knit::bench

// Groups rows into configurations (all repetitions of one case) and names their
// timer policy, reading both the reference benchmark's schema and ours. Shared by report and
// charts.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "driver/run/rows.hpp"

namespace knit::bench {

enum class config_kind {
  inline_loop,     // route work on the event loop (reference rows: tag "only")
  default_policy,  // the library default, the reference server's policy (spin unset)
  old_default,     // spin N*50us + park 1ms (reference rows: spin "default")
  flat50,          // spin 50us at every N
  no_spin,         // spin 0
  other,           // anything else (park, doorbell, steal, env changed)
  // knit choosing inline or the pool per route by measured cost (KNIT_MODE=auto).
  auto_mode,
  // The peers knit is compared with (see the report's "knit vs the peers"):
  asio,   // heavy routes on boost::asio::thread_pool(N), results posted back (KNIT_MODE=asio)
  multi,  // one io_context run by N threads, every route inline (KNIT_MODE=multi)
  peer,   // an external server started by --peer NAME=COMMAND (server_mode "peer:NAME")
};

// True for the configurations that are not knit's own design: asio, multi, external peers.
bool is_peer(config_kind p);
// True for a pooled row of any timer policy (the rows of section C and the pool sizes).
bool is_pool_policy(config_kind p);

// median with min and max over repetitions; n == 0 when no repetition had a value.
struct rep_stat {
  double median = 0, min = 0, max = 0;
  int n = 0;
  explicit operator bool() const { return n > 0; }
};

struct measured_config {
  std::string profile;               // cost_profile ("" for reference rows)
  std::optional<int> extra_cost_us;  // cost sweep rows only
  std::string mode;                  // "sat" | "rate"
  std::string tag;
  config_kind policy = config_kind::other;
  // Stands in for the default policy at its N when no library-default row exists:
  // the reference benchmark's own rows are spin "default" at N=1 and spin "0" above.
  bool stands_for_default = false;
  int threads = 0;
  int hosts = 1;  // event loops (KNIT_HOSTS)
  int fleet = 0;  // instances behind HAProxy; 0 = the server alone
  // "inline", "threads: N", "auto: N", "asio: N", "multi: N", "peer: NAME"; with more than
  // one host, ", hosts: H" after it ("threads: 2, hosts: 4"); behind HAProxy, ", fleet: N"
  // (N instances).
  std::string label;
  std::string policy_label;  // e.g. "old default (200us + park 1ms)"
  std::vector<const result_row*> reps;

  rep_stat stat(const std::function<std::optional<double>(const result_row&)>& f) const;
  rep_stat route(const std::string& route, double route_row_stats::*field) const;
  rep_stat route_opt(const std::string& route, std::optional<double> route_row_stats::*field) const;
};

config_kind classify(const result_row& r);
std::string policy_name(config_kind p);

// Configurations in first-seen order; rows of repeated cases share one measured_config.
std::vector<measured_config> group_configs(const std::vector<result_row>& rows);

// Selectors over one cost profile / extra cost / mode / number of hosts. The tables that
// predate KNIT_HOSTS (A, B, C, the peers, the cost sweep) are over one host; the hosts
// sweep (report_hosts.cpp) sets it.
struct config_scope {
  std::string profile;
  std::optional<int> extra_cost_us;
  std::string mode;
  int hosts = 1;
  int fleet = 0;  // the tables that predate fleets are over the server alone
};
bool in_scope(const measured_config& c, const config_scope& s);
const measured_config* inline_config(const std::vector<measured_config>& cs, const config_scope& s);
// The default policy at N: a library-default row if any, else the row standing for it.
const measured_config* default_policy_config(const std::vector<measured_config>& cs,
                                             const config_scope& s, int threads);
const measured_config* policy_config(const std::vector<measured_config>& cs, const config_scope& s,
                                     int threads, config_kind p);
// The auto / asio / multi configuration at N threads, or nullptr.
const measured_config* mode_config(const std::vector<measured_config>& cs, const config_scope& s,
                                   config_kind p, int threads);
// External peers in scope (config_kind::peer), first-seen order.
std::vector<const measured_config*> external_peers(const std::vector<measured_config>& cs,
                                                   const config_scope& s);
// The routes a configuration was loaded on (union over its repetitions).
std::vector<std::string> routes_of(const measured_config& c);

// Pool sizes of knit's pool (pooled rows of any timer policy; not auto, asio, multi) in scope,
// ascending.
std::vector<int> pool_sizes(const std::vector<measured_config>& cs, const config_scope& s);
// The axes of one cost profile's sweep, shared by its table and its charts: the extra
// costs measured (ascending) and the pool sizes measured at any of them (ascending).
struct sweep_axes {
  std::vector<int> costs;
  std::vector<int> sizes;
};
sweep_axes sweep_axes_of(const std::vector<measured_config>& cs, const std::string& profile);
// Cost profiles in first-seen order (rows without extra_cost_us only, or with, per flag).
std::vector<std::string> profiles(const std::vector<measured_config>& cs, bool sweep);
// Host counts measured in a cost profile (rows without extra_cost_us), ascending.
std::vector<int> host_counts(const std::vector<measured_config>& cs, const std::string& profile);

// Predicted idle cores of a spinning pool: N * spin / (spin + park) (reference section C).
std::optional<double> idle_model(const result_row& r);

// "8208" / "2.00 (1.98–2.05)": the median, with min–max when there were repetitions.
std::string cell(const rep_stat& s, int decimals);

}  // namespace knit::bench

// Groups rows into configurations (all repetitions of one case) and names their
// timer policy, reading both the seed's schema and ours. Shared by report and charts.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "driver/rows.hpp"

namespace knit::bench {

enum class Policy {
  Inline,      // route work on the event loop (seed: tag "only")
  SeedPolicy,  // the library default, which is the seed's policy (spin unset)
  OldDefault,  // spin N*50us + park 1ms (seed: spin "default")
  Flat50,      // spin 50us at every N
  NoSpin,      // spin 0
  Other,       // anything else (park, doorbell, steal, env changed)
  // knit choosing inline or the pool per route by measured cost (KNIT_MODE=auto).
  Auto,
  // The peers knit is compared with (see the report's "knit vs the peers"):
  Asio,   // heavy routes on boost::asio::thread_pool(N), results posted back (KNIT_MODE=asio)
  Multi,  // one io_context run by N threads, every route inline (KNIT_MODE=multi)
  Peer,   // an external server started by --peer NAME=COMMAND (server_mode "peer:NAME")
};

// True for the configurations that are not knit's own design: asio, multi, external peers.
bool is_peer(Policy p);
// True for a pooled row of any timer policy (the rows of section C and the pool sizes).
bool is_pool_policy(Policy p);

// median with min and max over repetitions; n == 0 when no repetition had a value.
struct Stat {
  double median = 0, min = 0, max = 0;
  int n = 0;
  explicit operator bool() const { return n > 0; }
};

struct Config {
  std::string profile;                // cost_profile ("" for seed rows)
  std::optional<int> extra_cost_us;   // cost sweep rows only
  std::string mode;                   // "sat" | "rate"
  std::string tag;
  Policy policy = Policy::Other;
  // Stands in for the seed policy at its N when no library-default row exists:
  // the seed's own rows are spin "default" at N=1 and spin "0" above.
  bool seed_equivalent = false;
  int threads = 0;
  std::string label;         // "inline", "threads: N", "auto: N", "asio: N", "multi: N", "peer: NAME"
  std::string policy_label;  // e.g. "old default (200us + park 1ms)"
  std::vector<const Row*> reps;

  Stat stat(const std::function<std::optional<double>(const Row&)>& f) const;
  Stat route(const std::string& route, double RouteStats::*field) const;
  Stat route_opt(const std::string& route, std::optional<double> RouteStats::*field) const;
};

Policy classify(const Row& r);
std::string policy_name(Policy p);

// Configurations in first-seen order; rows of repeated cases share one Config.
std::vector<Config> group_configs(const std::vector<Row>& rows);

// Selectors over one cost profile / extra cost / mode.
struct Scope {
  std::string profile;
  std::optional<int> extra_cost_us;
  std::string mode;
};
bool in_scope(const Config& c, const Scope& s);
const Config* inline_config(const std::vector<Config>& cs, const Scope& s);
// The seed policy at N: a library-default row if any, else the seed-equivalent row.
const Config* seed_policy_config(const std::vector<Config>& cs, const Scope& s, int threads);
const Config* policy_config(const std::vector<Config>& cs, const Scope& s, int threads, Policy p);
// The auto / asio / multi configuration at N threads, or nullptr.
const Config* mode_config(const std::vector<Config>& cs, const Scope& s, Policy p, int threads);
// External peers in scope (Policy::Peer), first-seen order.
std::vector<const Config*> external_peers(const std::vector<Config>& cs, const Scope& s);
// The routes a configuration was loaded on (union over its repetitions).
std::vector<std::string> routes_of(const Config& c);

// Pool sizes of knit's pool (pooled rows of any timer policy; not auto, asio, multi) in scope, ascending.
std::vector<int> pool_sizes(const std::vector<Config>& cs, const Scope& s);
// Cost profiles in first-seen order (rows without extra_cost_us only, or with, per flag).
std::vector<std::string> profiles(const std::vector<Config>& cs, bool sweep);

// Predicted idle cores of a spinning pool: N * spin / (spin + park) (seed section C).
std::optional<double> idle_model(const Row& r);

// "8208" / "2.00 (1.98–2.05)": the median, with min–max when there were repetitions.
std::string cell(const Stat& s, int decimals);

}  // namespace knit::bench

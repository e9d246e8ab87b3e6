// The server's SIGUSR1 "knit-stats {json}" line: parsing, and the counter diff over a window.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace knit::bench {

struct server_stats {
  std::string mode;  // KNIT_MODE as the server runs it: "inline", "pooled", ...
  std::map<std::string, double> requests;  // per route
  // Entries of "hosts": [{"requests": ..}, ..] (one per event loop); absent from a server
  // that runs one loop and does not list it.
  std::optional<int> hosts;
  bool has_pool = false;  // "pool": null in inline mode
  int pool_threads = 0;
  std::map<std::string, double>
      pool_totals;  // every numeric field of pool.totals (nested keys as a.b)
};

// Parses one stdout line; nullopt if it is not a knit-stats line or not valid JSON.
std::optional<server_stats> parse_stats_line(std::string_view line);

// pool.totals fields that are a level now, not a count since start: retired_running (worker
// threads still in a stuck task). A window's value for them is the level at its end.
bool is_gauge(const std::string& key);

// after - before for every key present in both (counters only grow; a key that
// appears only at the end is taken as counting from zero); for a gauge, its after value.
std::map<std::string, double> diff_counters(const std::map<std::string, double>& before,
                                            const std::map<std::string, double>& after);

// Each counter divided by pooled calls (calls_submitted, else calls_completed), so
// configurations with different throughput compare: host wakes per call and so on.
// Gauges are left out: a level per call means nothing.
std::map<std::string, double> per_call(const std::map<std::string, double>& diff);

}  // namespace knit::bench

// The server's SIGUSR1 "knit-stats {json}" line: parsing, and the counter diff over a window.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace knit::bench {

struct ServerStats {
  std::string mode;                               // "inline" | "pooled"
  std::map<std::string, double> requests;         // per route
  bool has_pool = false;                          // "pool": null in inline mode
  int pool_threads = 0;
  std::map<std::string, double> pool_totals;      // every numeric field of pool.totals (nested keys as a.b)
};

// Parses one stdout line; nullopt if it is not a knit-stats line or not valid JSON.
std::optional<ServerStats> parse_stats_line(std::string_view line);

// after - before for every key present in both (counters only grow; a key that
// appears only at the end is taken as counting from zero).
std::map<std::string, double> diff_counters(const std::map<std::string, double>& before,
                                            const std::map<std::string, double>& after);

// Each counter divided by pooled calls (calls_submitted, else calls_completed), so
// configurations with different throughput compare: host wakes per call and so on.
std::map<std::string, double> per_call(const std::map<std::string, double>& diff);

}  // namespace knit::bench

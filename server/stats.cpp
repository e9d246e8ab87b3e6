// Formats the knit-stats line; built by hand because every field is a number or a fixed word.
#include "stats.hpp"

namespace knit_server {

std::string format_stats_line(exec_mode mode, const request_counters& counters,
                              std::optional<std::string_view> pool_json) {
  std::string line = "knit-stats {\"mode\":\"";
  line += to_string(mode);
  line += "\",\"requests\":{\"ping\":";
  line += std::to_string(counters.ping);
  line += ",\"ssr\":";
  line += std::to_string(counters.ssr);
  line += ",\"jwt\":";
  line += std::to_string(counters.jwt);
  line += ",\"other\":";
  line += std::to_string(counters.other);
  line += "},\"pool\":";
  line += pool_json ? *pool_json : std::string_view("null");
  line += '}';
  return line;
}

}  // namespace knit_server

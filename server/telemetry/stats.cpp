// Formats the knit-stats line; built by hand because every field is a number or a fixed word.
#include "telemetry/stats.hpp"

namespace knit_server {

std::string format_stats_line(exec_mode mode, const request_counters& counters,
                              const rejection_counters& rejected, const server_gauges& gauges,
                              std::optional<std::string_view> pool_json,
                              std::optional<std::string_view> auto_json,
                              std::span<const host_figures> hosts,
                              std::optional<worker_process_figures> workers) {
  std::string line = "knit-stats {\"mode\":\"";
  line += to_string(mode);
  line += "\",\"requests\":{\"ping\":";
  line += std::to_string(counters.ping.load(std::memory_order_relaxed));
  line += ",\"ssr\":";
  line += std::to_string(counters.ssr.load(std::memory_order_relaxed));
  line += ",\"jwt\":";
  line += std::to_string(counters.jwt.load(std::memory_order_relaxed));
  line += ",\"other\":";
  line += std::to_string(counters.other.load(std::memory_order_relaxed));
  line += ",\"plaintext\":";
  line += std::to_string(counters.plaintext.load(std::memory_order_relaxed));
  line += "},\"rejected\":{\"queue_delay\":";
  line += std::to_string(rejected.queue_delay.load(std::memory_order_relaxed));
  line += ",\"queue_count\":";
  line += std::to_string(rejected.queue_count.load(std::memory_order_relaxed));
  line += ",\"pool_full\":";
  line += std::to_string(rejected.pool_full.load(std::memory_order_relaxed));
  line += ",\"write_budget\":";
  line += std::to_string(rejected.write_budget.load(std::memory_order_relaxed));
  line += ",\"queue_wait\":";
  line += std::to_string(rejected.queue_wait.load(std::memory_order_relaxed));
  line += "},\"connections\":";
  line += std::to_string(gauges.connections);
  line += ",\"buffered_bytes\":";
  line += std::to_string(gauges.buffered_bytes);
  line += ",\"log_dropped\":";
  line += std::to_string(gauges.log_dropped);
  line += ",\"parked_bytes\":";
  line += std::to_string(gauges.parked_bytes);
  line += ",\"writes\":";
  line += std::to_string(counters.writes.load(std::memory_order_relaxed));
  line += ",\"pool\":";
  line += pool_json ? *pool_json : std::string_view("null");
  if (auto_json) {
    line += ",\"auto\":";
    line += *auto_json;
  }
  line += ",\"isolation\":";
  line += workers ? "\"process\"" : "\"thread\"";
  if (workers) {
    line += ",\"workers\":{\"crashed\":";
    line += std::to_string(workers->crashed);
    line += ",\"respawned\":";
    line += std::to_string(workers->respawned);
    line += ",\"killed\":";
    line += std::to_string(workers->killed);
    line += ",\"live\":";
    line += std::to_string(workers->live);
    line += ",\"degraded\":";
    line += std::to_string(workers->degraded);
    line += ",\"sandbox_kills\":";
    line += std::to_string(workers->sandbox_kills);
    line += ",\"memory_kills\":";
    line += std::to_string(workers->memory_kills);
    line += ",\"resent\":";
    line += std::to_string(workers->resent);
    line += ",\"moved\":";
    line += std::to_string(workers->moved);
    line += ",\"protocol_kills\":";
    line += std::to_string(workers->protocol_kills);
    line += '}';
  }
  if (!hosts.empty()) {
    line += ",\"hosts\":[";
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      if (i > 0) line += ',';
      line += "{\"requests\":";
      line += std::to_string(hosts[i].requests);
      line += ",\"connections\":";
      line += std::to_string(hosts[i].connections);
      line += '}';
    }
    line += ']';
  }
  line += '}';
  return line;
}

}  // namespace knit_server

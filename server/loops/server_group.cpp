// Every host's server stopped, cut and counted as one.
#include "loops/server_group.hpp"

#include <atomic>
#include <memory>
#include <utility>

#include "placement/process_isolation.hpp"

namespace knit_server {

void server_group::stop(std::function<void()> drained) {
  if (servers_.size() == 1) return servers_.front()->stop(std::move(drained));
  // Each server reports on its own loop's thread; the last one to report calls `drained`.
  // acq_rel: whichever thread makes the last decrement has seen every other host drain.
  auto left = std::make_shared<std::atomic<std::size_t>>(servers_.size());
  auto report = std::make_shared<std::function<void()>>(std::move(drained));
  for (server* s : servers_) {
    s->stop([left, report] {
      if (left->fetch_sub(1, std::memory_order_acq_rel) == 1) (*report)();
    });
  }
}

void server_group::cut_slow_clients() {
  for (server* s : servers_) s->cut_slow_clients();
}

std::size_t server_group::connections() const {
  std::size_t open = 0;
  for (const server* s : servers_) open += s->connections();
  return open;
}

std::string server_group::stats_line(std::uint64_t log_dropped,
                                     std::optional<std::string_view> pool_json,
                                     std::optional<std::string_view> auto_json) const {
  request_counters total;
  rejection_counters rejected;
  server_gauges gauges;
  gauges.log_dropped = log_dropped;
  std::vector<host_figures> hosts;
  hosts.reserve(servers_.size());
  for (const server* s : servers_) {
    request_counters part;
    part.add(s->counters());  // read once: the host's figure and its share of the total agree
    total.add(part);
    rejected.add(s->rejected());
    const std::size_t open = s->connections();
    hosts.push_back({part.total(), open});
    gauges.connections += open;
    gauges.buffered_bytes += s->buffered_bytes();
  }
  // One budget for every host (write_budget.hpp): read it once, not once per host.
  if (!servers_.empty()) gauges.parked_bytes = servers_.front()->budget().parked();
  const exec_mode mode = servers_.empty() ? exec_mode::pooled : servers_.front()->config().mode;
  std::optional<worker_process_figures> workers;
  if (!servers_.empty() && servers_.front()->config().worker_isolation == isolation::process) {
    workers = worker_figures();
  }
  return format_stats_line(mode, total, rejected, gauges, pool_json, auto_json, hosts, workers);
}

}  // namespace knit_server

// Gathers every host's health events for the readiness policy, and its figures for /metrics.
#include "loops/process_status.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include <knit/knit.hpp>
#include <knit/process.hpp>

#include "loops/server.hpp"
#include "ops/metrics_exposition.hpp"
#include "placement/process_isolation.hpp"

namespace knit_server {

using clock_type = std::chrono::steady_clock;

process_status::process_status(unsigned hosts, const knit::pool* pool)
    : hosts_(hosts), pool_(pool), servers_(std::make_unique<std::atomic<const server*>[]>(hosts)) {
  for (unsigned i = 0; i < hosts_; ++i) servers_[i].store(nullptr, std::memory_order_relaxed);
}

void process_status::add(unsigned index, const server& s) noexcept {
  if (index < hosts_) servers_[index].store(&s, std::memory_order_release);
}

readiness process_status::assess(clock_type::time_point now) const {
  readiness_signals signals;
  signals.now = now;
  signals.draining = draining();
  std::vector<clock_type::time_point> stuck;
  for (unsigned i = 0; i < hosts_; ++i) {
    const server* s = servers_[i].load(std::memory_order_acquire);
    if (!s) continue;
    signals.last_refusal = std::max(signals.last_refusal, s->health().last_refusal());
    s->health().append_stuck_times(stuck);
  }
  // The policy_.stuck_calls-th most recent stuck call, over every host.
  const std::size_t n = policy_.stuck_calls;
  if (n > 0 && stuck.size() >= n) {
    std::nth_element(stuck.begin(), stuck.begin() + static_cast<std::ptrdiff_t>(n - 1), stuck.end(),
                     std::greater<>());
    signals.nth_last_stuck = stuck[n - 1];
  }
  // Process-wide atomics: any thread may read them (0 with thread isolation).
  signals.crash_looping_workers = knit::current_process_stats().degraded_workers;
  return assess_readiness(signals, policy_);
}

std::string process_status::metrics_page(clock_type::time_point now) const {
  metrics_snapshot snapshot;
  snapshot.ready = assess(now);
  for (unsigned i = 0; i < hosts_; ++i) {
    const server* s = servers_[i].load(std::memory_order_acquire);
    if (!s) continue;  // not started yet: counted from the next scrape
    host_metrics& m = snapshot.hosts.emplace_back();
    s->metrics().add_to(m.requests);
    m.refused_queue_delay = s->rejected().queue_delay.load(std::memory_order_relaxed);
    m.refused_queue_count = s->rejected().queue_count.load(std::memory_order_relaxed);
    m.refused_pool_full = s->rejected().pool_full.load(std::memory_order_relaxed);
    m.refused_write_budget = s->rejected().write_budget.load(std::memory_order_relaxed);
    m.refused_queue_wait = s->rejected().queue_wait.load(std::memory_order_relaxed);
    snapshot.parked_bytes = s->budget().parked();  // one budget: every host's is the same
    snapshot.budget_bytes = s->budget().limit();
    m.stuck_calls = s->health().stuck_total();
    m.open_connections = s->connections();
    m.buffered_bytes = s->buffered_bytes();
    if (s->config().worker_isolation == isolation::process) snapshot.workers = worker_figures();
  }
  std::optional<knit::pool_stats> pool_stats;
  if (pool_) pool_stats = pool_->stats();  // on one of its hosts' threads: see the header
  snapshot.pool = pool_stats ? &*pool_stats : nullptr;
  return format_metrics(snapshot);
}

}  // namespace knit_server

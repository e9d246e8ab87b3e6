// pool_stats: the pool's always-on counters (per worker, plus the host's own), and to_json.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace knit {

// One worker's counters. Each is written only by its worker (relaxed), so reading them
// costs the worker nothing but a private cache line.
struct worker_stats {
  std::uint64_t calls_run = 0;           // calls this worker executed (own + stolen)
  std::uint64_t calls_stolen = 0;        // of those, taken from a peer's ring
  std::uint64_t calls_skipped = 0;       // abandoned calls (cancelled/timed out) handed back unrun
  std::uint64_t spin_hits = 0;           // spins that caught work before the budget ran out
  std::uint64_t spins = 0;               // spin rounds started
  std::uint64_t parks = 0;               // futex waits entered
  std::uint64_t wakes_doorbell = 0;      // parks ended by a doorbell (host or peer)
  std::uint64_t wakes_timeout = 0;       // parks ended by park_ms expiring
  std::uint64_t peer_wakes = 0;          // FUTEX_WAKE syscalls this worker issued for a peer
  std::uint64_t completion_signals = 0;  // eventfd writes to wake the host (coalesced)
};

struct pool_stats {
  unsigned threads = 0;
  // Host side.
  std::uint64_t calls_submitted = 0;     // accepted by submit()
  std::uint64_t calls_completed = 0;     // handlers called, any outcome
  std::uint64_t calls_rejected = 0;      // submit() refused (queue_full / shut_down)
  std::uint64_t calls_backlogged = 0;    // had to wait in the host backlog (ring full)
  std::uint64_t calls_cancelled = 0;
  std::uint64_t calls_timed_out = 0;
  std::uint64_t calls_failed = 0;        // task threw
  std::uint64_t host_wakes = 0;          // FUTEX_WAKE syscalls issued by the host
  std::uint64_t completion_batches = 0;  // drain() rounds that found at least one result
  std::uint64_t calls_stuck = 0;         // running calls given up on (stuck_after or shutdown's deadline)
  std::uint64_t workers_replaced = 0;    // retired workers whose seat got a fresh thread
  std::uint64_t retired_running = 0;     // retired workers whose stuck task has not returned (now)
  std::vector<worker_stats> workers;

  worker_stats totals() const;  // sum over workers
};

// {"threads":N,"totals":{...host and summed worker counters...},"workers":[{...},...]}
std::string to_json(const pool_stats& stats);

}  // namespace knit

// process_status: the whole process as its operations endpoints see it (GET /livez, /readyz,
// /metrics): every event loop's server, the pool, and whether the drain has begun.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "ops/readiness.hpp"

namespace knit {
class pool;
}

namespace knit_server {

class server;

// One per process, owned by main and outliving every server; each server holds a pointer to
// it, and its sessions answer the operations endpoints from it, on the session's own thread.
//
// Threads: any event loop's thread may call assess() and metrics_page() at any time, also
// while main is still adding the later hosts (KNIT_HOSTS>1: host 0 accepts before host 1
// exists), so each host's slot is an atomic pointer, stored once with release by add() and
// loaded with acquire; a host not added yet is not counted yet. What is read of another
// host's server is what the knit-stats line reads from the control thread: relaxed counters,
// and connections() / buffered_bytes() under that server's lock (server.hpp).
// The pool's counters may be read on any thread (knit/pool.hpp, stats()).
class process_status {
 public:
  // `hosts`: KNIT_HOSTS. `pool`: see above (null: no pool figures).
  process_status(unsigned hosts, const knit::pool* pool);

  process_status(const process_status&) = delete;
  process_status& operator=(const process_status&) = delete;

  // Host `index`'s server, once it exists (index < hosts). `s` must outlive every use.
  void add(unsigned index, const server& s) noexcept;

  // The drain has begun (SIGTERM): /readyz answers 503 "draining" from now on. Any thread.
  // Partner: the relaxed load in draining(); nothing else is ordered by it.
  void begin_drain() noexcept { draining_.store(true, std::memory_order_relaxed); }
  bool draining() const noexcept { return draining_.load(std::memory_order_relaxed); }

  // The readiness policy (readiness.hpp) over every host's events at `now`.
  readiness assess(std::chrono::steady_clock::time_point now) const;

  // The /metrics page (metrics_exposition.hpp): every host's figures, the readiness at `now`,
  // and the pool's counters (when main gave the pool).
  std::string metrics_page(std::chrono::steady_clock::time_point now) const;

  const readiness_policy& policy() const noexcept { return policy_; }

 private:
  unsigned hosts_;
  const knit::pool* pool_;
  std::unique_ptr<std::atomic<const server*>[]> servers_;  // hosts_ slots; see the threads note
  std::atomic<bool> draining_{false};
  readiness_policy policy_;
};

}  // namespace knit_server

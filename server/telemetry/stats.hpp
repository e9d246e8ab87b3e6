// Per-route request counters and the one-line `knit-stats {json}` report printed on SIGUSR1.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "config.hpp"
#include "http/router.hpp"
#include "telemetry/refusal_reason.hpp"

namespace knit_server {

// A count that any thread may increment while another reads it. Relaxed: each increment
// is counted exactly once (an atomic read-modify-write), and nothing else is ordered by it.
// Partner: the reader is format_stats_line, on SIGUSR1, which wants totals, not an order.
// In the single-threaded modes the increment is uncontended: no lock, no waiting.
using relaxed_counter = std::atomic<std::uint64_t>;

inline void bump(relaxed_counter& c) noexcept { c.fetch_add(1, std::memory_order_relaxed); }

// Requests answered, by route. In KNIT_MODE=multi every io thread counts here, so each field
// is a relaxed atomic (above); the other modes count from the host thread alone.
struct request_counters {
  relaxed_counter ping = 0;
  relaxed_counter ssr = 0;  // includes /ssr answered 503 (pool full) or 500
  relaxed_counter jwt = 0;  // includes /jwt answered 400, 503 or 500
  // 404s, requests refused before routing (400, 413, 431), and the operations endpoints
  // (/livez, /readyz, /metrics: a load balancer's checks are not the benchmark's traffic).
  relaxed_counter other = 0;
  // Write system calls that sent responses (a session's sendmsg, synchronous or Asio's): one
  // per response, or one per batch of pipelined responses written together (session.hpp).
  relaxed_counter writes = 0;
  // GET /plaintext (TechEmpower's plaintext test): benchmark traffic, so not in `other`. Last,
  // so that {ping, ssr, jwt, other} initializers keep their meaning.
  relaxed_counter plaintext = 0;

  void count(route r) noexcept {
    switch (r) {
      case route::ping: bump(ping); break;
      case route::ssr: bump(ssr); break;
      case route::jwt: bump(jwt); break;
      case route::plaintext: bump(plaintext); break;
      case route::livez:
      case route::readyz:
      case route::metrics:
      case route::not_found: bump(other); break;
    }
  }

  // Adds `part`'s counts (the knit-stats line sums the hosts), each read once.
  void add(const request_counters& part) noexcept {
    ping.fetch_add(part.ping.load(std::memory_order_relaxed), std::memory_order_relaxed);
    ssr.fetch_add(part.ssr.load(std::memory_order_relaxed), std::memory_order_relaxed);
    jwt.fetch_add(part.jwt.load(std::memory_order_relaxed), std::memory_order_relaxed);
    other.fetch_add(part.other.load(std::memory_order_relaxed), std::memory_order_relaxed);
    writes.fetch_add(part.writes.load(std::memory_order_relaxed), std::memory_order_relaxed);
    plaintext.fetch_add(part.plaintext.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }

  // Every route's count added up.
  std::uint64_t total() const noexcept {
    return ping.load(std::memory_order_relaxed) + ssr.load(std::memory_order_relaxed) +
           jwt.load(std::memory_order_relaxed) + other.load(std::memory_order_relaxed) +
           plaintext.load(std::memory_order_relaxed);
  }
};

// Heavy requests answered 503 + Retry-After instead of being run, by reason. Counted like
// request_counters (they are also counted there, under their route).
struct rejection_counters {
  relaxed_counter queue_delay = 0;   // admission: expected wait over KNIT_MAX_QUEUE_MS
  relaxed_counter queue_count = 0;   // admission: KNIT_MAX_QUEUED calls already ahead
  relaxed_counter pool_full = 0;     // the pool refused the call (KNIT_MAX_PENDING, shutdown)
  relaxed_counter write_budget = 0;  // shed: unfinished writes over KNIT_MEMORY_BUDGET_MB
  relaxed_counter queue_wait = 0;    // shed: not started within KNIT_MAX_QUEUE_WAIT_MS

  // One refusal, under its reason.
  void count(refusal_reason reason) noexcept {
    switch (reason) {
      case refusal_reason::queue_delay: bump(queue_delay); break;
      case refusal_reason::queue_count: bump(queue_count); break;
      case refusal_reason::queue_wait: bump(queue_wait); break;
      case refusal_reason::pool_full: bump(pool_full); break;
      case refusal_reason::write_budget: bump(write_budget); break;
    }
  }

  // Adds `part`'s counts, as request_counters::add.
  void add(const rejection_counters& part) noexcept {
    queue_delay.fetch_add(part.queue_delay.load(std::memory_order_relaxed),
                          std::memory_order_relaxed);
    queue_count.fetch_add(part.queue_count.load(std::memory_order_relaxed),
                          std::memory_order_relaxed);
    queue_wait.fetch_add(part.queue_wait.load(std::memory_order_relaxed),
                         std::memory_order_relaxed);
    pool_full.fetch_add(part.pool_full.load(std::memory_order_relaxed), std::memory_order_relaxed);
    write_budget.fetch_add(part.write_budget.load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
  }
};

// One event loop's part (KNIT_HOSTS), in the line's "hosts" list.
struct host_figures {
  std::uint64_t requests = 0;     // requests it answered, every route (request_counters::total)
  std::uint64_t connections = 0;  // connections open on it now
};

// Figures read when the line is printed.
struct server_gauges {
  std::uint64_t connections = 0;     // open connections
  std::uint64_t buffered_bytes = 0;  // bytes the connections hold in their buffers (capacity)
  std::uint64_t log_dropped = 0;     // stdout/stderr lines dropped because the write would block
  std::uint64_t parked_bytes = 0;    // write_budget::parked(): what unfinished writes count
};

// KNIT_ISOLATION=process: the worker processes' counters (knit::process_stats), process-wide.
struct worker_process_figures {
  std::uint64_t crashed = 0;    // worker processes that died during a call or broke the protocol
  std::uint64_t respawned = 0;  // started in place of one that crashed or was killed
  std::uint64_t killed = 0;     // killed by the server: a call past its deadline or stuck limit
  std::uint64_t live = 0;       // running now
  std::uint64_t degraded = 0;   // pool workers in a crash loop, their respawns backing off
  std::uint64_t sandbox_kills = 0;   // ended by their sandbox (a refused system call)
  std::uint64_t memory_kills = 0;    // replaced after a task went over the memory limit
  std::uint64_t resent = 0;          // calls sent again to another child (theirs died before them)
  std::uint64_t moved = 0;           // calls taken back from behind a slow call, to an idle child
  std::uint64_t protocol_kills = 0;  // children killed for breaking the protocol or hanging
};

// The whole line, without the newline:
//   knit-stats {"mode":"pooled","requests":{"ping":N,"ssr":N,"jwt":N,"other":N,"plaintext":N},
//               "rejected":{"queue_delay":N,"queue_count":N,"pool_full":N,"write_budget":N},
//               "connections":N,"buffered_bytes":N,"log_dropped":N,"parked_bytes":N,"writes":N,
//               "pool":{...}[,"auto":{...}],"isolation":"thread"|"process"
//               [,"workers":{"crashed":N,"respawned":N,"killed":N,"live":N,"degraded":N}]
//               [,"hosts":[{"requests":N,"connections":N},...]]}
// (one line). `pool_json` is knit::to_json(pool.stats()), or nullopt in inline and asio mode
// ("pool":null). `auto_json` (heavy_placement::auto_json, auto mode only) adds the "auto"
// field, absent otherwise. `hosts`, one entry per event loop (KNIT_HOSTS; the server always
// passes them), adds "hosts" when not empty; `counters`, `rejected` and `gauges` are then the
// totals over them. `workers` (process isolation only) says "isolation":"process" and adds
// "workers"; without it the line says "isolation":"thread". The benchmark driver parses this line:
// change it only together with the driver (it reads "requests" by name, so fields may be added).
std::string format_stats_line(exec_mode mode, const request_counters& counters,
                              const rejection_counters& rejected, const server_gauges& gauges,
                              std::optional<std::string_view> pool_json,
                              std::optional<std::string_view> auto_json = std::nullopt,
                              std::span<const host_figures> hosts = {},
                              std::optional<worker_process_figures> workers = std::nullopt);

}  // namespace knit_server

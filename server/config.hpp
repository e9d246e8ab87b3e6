// The server's own configuration (where it listens, the mode, costs, limits, JWT_SECRET). It is
// filled from the command line and the environment by server/settings/ (one table of every
// setting: settings_table.cpp), which checks every value; this header holds only the result.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace knit_server {

// Where /ssr and /jwt run. The first two are the reference server's two variants; the next two are
// what a C++ user would write instead of knit (the peers knit is measured against); the last is
// knit deciding per route.
enum class exec_mode {
  inline_host,   // "inline": on the host thread (the reference server's hono_only); /ping
                 //   waits behind them
  pooled,        // "pooled": on a knit pool worker (hono_knitting)
  asio_pool,     // "asio": boost::asio::thread_pool of KNIT_THREADS threads, the result
                 //   posted back to the host's io_context (the five-line alternative)
  multi_thread,  // "multi": one io_context run by KNIT_THREADS threads, every route inline on
                 //   whichever thread reads the request (the classic multi-threaded Beast server)
  auto_offload,  // "auto": per route, inline while its measured cost is small, else the pool
};

// What a pool worker runs /ssr and /jwt in (KNIT_ISOLATION; pooled mode only).
enum class isolation {
  thread,   // "thread": on the pool's worker thread, in the server's own address space
  process,  // "process": in a child process fronted by that thread
            // (server/placement/process_isolation.hpp):
            //   a task that crashes fails its own call (500) and the server lives
};

// How an event loop waits and does its sessions' reads and writes (KNIT_IO, docs/server-io.md).
enum class io_backend {
  auto_pick,  // "auto": io_uring where the kernel grants it, else epoll (the banner says which)
  uring,      // "uring": io_uring, or the server does not start
  epoll,      // "epoll": Asio's own epoll reactor
};

// "auto", "uring" or "epoll": the spelling of KNIT_IO.
std::string_view to_string(io_backend io) noexcept;

// "thread" or "process": the spelling of KNIT_ISOLATION and of the knit-stats field.
std::string_view to_string(isolation i) noexcept;

// "inline", "pooled", "asio", "multi" or "auto": the spelling of KNIT_MODE and of the
// knit-stats "mode" field.
std::string_view to_string(exec_mode mode) noexcept;

// True for the modes that run a knit pool (pooled, auto).
constexpr bool uses_knit_pool(exec_mode mode) noexcept {
  return mode == exec_mode::pooled || mode == exec_mode::auto_offload;
}

struct server_config {
  std::string host = "127.0.0.1";      // HOST: an IPv4/IPv6 literal, or "localhost"
  std::uint16_t port = 3000;           // PORT: 0 asks the kernel for a free port
  exec_mode mode = exec_mode::pooled;  // KNIT_MODE
  // KNIT_ISOLATION: thread (default) or process; process needs KNIT_MODE=pooled (the other
  // modes run the routes on the loop's thread or on threads knit does not own).
  isolation worker_isolation = isolation::thread;
  // KNIT_IO: io_uring or epoll under each event loop. Multi mode always runs Asio's own loop.
  io_backend io = io_backend::auto_pick;

  // KNIT_HOSTS: event loops, each with its own thread, io_context and SO_REUSEPORT listener
  // on the same port (docs/server-hosts.md). 1 is the single event loop on the main thread.
  static constexpr unsigned kMaxHosts = 1024;
  // KNIT_HOSTS with a knit pool: its max_hosts is at most 64, and the control thread that
  // builds the pool never submits, so it takes no host index.
  static constexpr unsigned kMaxPoolHosts = 64;
  unsigned hosts = 1;

  // KNIT_COST_PROFILE names the per-route CPU cost to emulate; KNIT_SSR_COST_US and
  // KNIT_JWT_COST_US override it per route. "bun" is the reference server's measured cost of the
  // Bun routes, so a C++ server can stand in for the JS one; "native" adds nothing.
  std::string cost_profile = "native";
  std::uint32_t ssr_cost_us = 0;
  std::uint32_t jwt_cost_us = 0;

  // HS256 key bytes. From JWT_SECRET, or 32 random bytes when it is unset (then
  // jwt_secret_generated is true and the caller warns: tokens will not survive a restart).
  std::string jwt_secret;
  bool jwt_secret_generated = false;

  std::size_t max_connections = 10000;             // KNIT_MAX_CONNECTIONS
  std::chrono::milliseconds idle_timeout{30'000};  // KNIT_IDLE_TIMEOUT_MS: read and write deadline

  // KNIT_MEMORY_BUDGET_MB: the bytes unfinished writes may park, user space and kernel
  // together, before new /ssr and /jwt are shed (write_budget.hpp). Unset: derived at start-up
  // (memory_budget.hpp: half the cgroup's memory.max, else 1024 MB).
  static constexpr std::uint64_t kMaxMemoryBudgetMb = 1'048'576;  // 1 TiB
  std::optional<std::uint64_t> memory_budget_mb;
  // KNIT_SNDBUF_KB: SO_SNDBUF of every accepted socket, in KiB; Linux doubles it, so a
  // connection's send queue holds at most 2 x this. 64 KiB (a 128 KiB queue) keeps a slow
  // reader's kernel share small while a reader behind a proxy in the same data centre
  // (RTT <= 1 ms) still gets >= 128 MB/s. 0 leaves the kernel's autotuning (up to tcp_wmem's
  // maximum, 4 MiB by default, per connection).
  static constexpr std::size_t kMaxSndbufKb = 65'536;
  std::size_t sndbuf_kb = 64;

  // Admission control for /ssr and /jwt in pooled mode (admission.hpp): a call expected to
  // wait longer than max_queue_delay for a worker, or finding max_queued calls ahead of it,
  // is answered 503 with Retry-After at once. 0 turns either rule off.
  std::chrono::milliseconds max_queue_delay{250};  // KNIT_MAX_QUEUE_MS
  std::size_t max_queued = 4096;                   // KNIT_MAX_QUEUED
  // The queue-wait deadline (start_deadlines.hpp): an accepted call not started within this
  // is answered 503 instead of run. KNIT_MAX_QUEUE_WAIT_MS; unset (nullopt) = 1.4 x
  // max_queue_delay (350 ms at the default), above the 1.2 x that waits reach once the
  // estimate has measured the pool; 0 = no deadline.
  std::optional<std::chrono::milliseconds> max_queue_wait_ms;
  std::chrono::microseconds max_queue_wait() const noexcept {
    if (max_queue_wait_ms) return *max_queue_wait_ms;
    return std::chrono::microseconds(max_queue_delay) * 7 / 5;
  }

  // KNIT_DRAIN_DELAY_MS: on the first SIGTERM, how long /readyz answers 503 "draining" while
  // every other request is still served as before, so a load balancer that checks /readyz
  // takes the instance out of rotation before its listener closes (drain_sequence.hpp). 0:
  // the stop begins at the signal, as it did before the drain existed.
  static constexpr std::chrono::milliseconds kMaxDrainDelay{600'000};
  std::chrono::milliseconds drain_delay{0};

  // Once the server is stopping, the most a client still gets for one read or write, so a
  // slow client cannot hold up the exit: 5 s, or KNIT_STOP_TIMEOUT_MS when that is shorter
  // (main sets it with stop_grace_for, since the pool's options own that variable).
  static constexpr std::chrono::milliseconds kMaxStopGrace{5'000};
  std::chrono::milliseconds stop_grace = kMaxStopGrace;

  // Fixed limits. A request body above kBodyLimit gets 413, a header above kHeaderLimit 431.
  static constexpr std::size_t kBodyLimit = 64 * 1024;
  static constexpr std::size_t kHeaderLimit = 8 * 1024;
  // At most this many header fields (trailer fields included) per request, else 431: what
  // Beast stores per field is many times its bytes (request_parser.hpp).
  static constexpr std::size_t kFieldLimit = 128;
  // The most a connection's read buffer may hold. The header must fit (it is parsed from
  // the buffer whole), so does a chunk-size line with its extensions, and so does a
  // trailer; body bytes pass through it into the body. A request that needs more is
  // refused (400, or 431 inside the header) instead of growing the buffer.
  static constexpr std::size_t kReadBufferLimit = 2 * kHeaderLimit;
};

// min(kMaxStopGrace, stop_timeout); kMaxStopGrace when stop_timeout is 0 (no bound).
constexpr std::chrono::milliseconds stop_grace_for(
    std::chrono::milliseconds stop_timeout) noexcept {
  return stop_timeout.count() > 0 && stop_timeout < server_config::kMaxStopGrace
             ? stop_timeout
             : server_config::kMaxStopGrace;
}

// A bad setting. what() names the flag or variable and quotes the value, e.g.
//   PORT="70000": expected an integer from 0 to 65535
class server_config_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Looks a variable up; nullopt when unset. The seam that lets tests feed a fake environment
// (settings/server_settings.hpp: config_from_env).
using env_lookup = std::function<std::optional<std::string>(const char* name)>;

}  // namespace knit_server

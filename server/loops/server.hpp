// What every connection of one event loop shares (configuration, counters, the heavy routes'
// placement, the session list) and the stop protocol.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_set>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "config.hpp"
#include "http/ping_cache.hpp"
#include "limits/connection_limit.hpp"
#include "limits/write_budget.hpp"
#include "loops/io_threading.hpp"
#include "loops/listener.hpp"
#include "placement/heavy_placement.hpp"
#include "telemetry/request_metrics.hpp"
#include "telemetry/stats.hpp"

namespace knit_server {

class io_ring;

class process_status;
class session;

// One server per event loop: with KNIT_HOSTS=H there are H of them (server_group.hpp), each
// with its own listener on the shared port, its own sessions and counters.
//
// Threads: threading_ (io_threading.hpp) is the policy chosen at start-up. The loop's own
// thread runs every session (KNIT_MODE=multi: any of its N io threads runs any handler), and
// the control thread (signals, the stop deadline: main.cpp) calls stop(), cut_slow_clients(),
// connections() and buffered_bytes(). The same code holds in both, because:
//   - each session's own state is touched only on its connection_executor's thread (multi
//     mode: its strand); another thread posts there;
//   - sessions_, sweeping_, sweep_timer_ and drained_ are guarded by sessions_mutex_, which
//     threading_.lock() takes in those two only, and only when a connection opens or
//     closes, at a sweep, and at stop: never per request;
//   - stopping_ and the counters are relaxed atomics, each naming its partner;
//   - the /ping cache is one per thread (ping_cache.hpp);
//   - stop(), the sweep and cut_slow_clients() reach each session through session::stop()
//     and session::check_deadline(), which run on the session's thread; the sweep reads
//     only the session's atomic deadline to decide whether to go there at all;
//   - the listener runs its accept loop on its own executor (listener.hpp).
//
// Stop protocol (stop()):
//   1. close the acceptor: no new connections;
//   2. ask every session to stop: an idle keep-alive connection (no byte of a next request
//      received) is closed at once; any other finishes its current request, sends the
//      response with "Connection: close", and closes. A request in progress is one the
//      session had whole (handle_request ran) before the stop; one that only arrives whole
//      after it (the rest of a half-sent request, a pipelined one, one that raced the
//      stop on another thread) is answered 503 + Retry-After + Connection: close without
//      being routed to a worker: it was not started, so the client may safely retry it;
//   3. when the last session is gone, call `drained` (posted, never from inside stop()).
// The caller then stops the io_context and shuts the pool down. Skipping 2 would keep idle
// keep-alive clients' connections open until their idle timeout; calling `drained` before
// the last session is gone could cut a response short.
//
// Deadlines: each session records when its pending read or write must have finished, and
// one sweep timer, running only while connections exist, cancels the overdue ones every
// idle_timeout/8 (10 ms to 1 s). A timer per session operation (beast::tcp_stream) would put
// two timer-queue updates on every request; the sweep costs a request one clock read.
// A deadline is therefore enforced up to one sweep period late.
class server {
 public:
  // `cfg`, `placement`, `limit` (KNIT_MAX_CONNECTIONS) and `budget` (KNIT_MEMORY_BUDGET_MB),
  // the last two shared by every host, must outlive the server; the server must outlive every
  // session, which the stop protocol guarantees when the io_context is stopped only from
  // `drained`. `status` (process_status.hpp, the whole process as /livez, /readyz and
  // /metrics report it) must outlive the server too; a server built without one (the fuzz
  // target) answers those paths 404, as any unknown path.
  server(boost::asio::io_context& io, const server_config& cfg, heavy_placement& placement,
         connection_limit& limit, write_budget& budget, const process_status* status = nullptr);

  server(const server&) = delete;
  server& operator=(const server&) = delete;

  // Binds and listens on cfg.host:cfg.port and returns the bound endpoint (the real port
  // when PORT=0). Throws boost::system::system_error, e.g. when the port is taken.
  boost::asio::ip::tcp::endpoint listen();

  // KNIT_HOSTS>1: listen() on `port` instead of cfg.port, with SO_REUSEPORT, so that every
  // host's listener binds the same port and the kernel spreads the connections over them.
  // Host 0 passes cfg.port (0: the kernel picks one), the others the port host 0 got.
  boost::asio::ip::tcp::endpoint listen_shared(std::uint16_t port);

  // Starts the accept loop. Call after listen().
  void start();

  // Graceful stop; see the protocol above. `drained` is posted to the io_context (in multi
  // mode it may run on any of its threads). A second call does nothing.
  void stop(std::function<void()> drained);

  // The stop deadline has passed (stop_deadline.hpp): cancels every connection's pending
  // read or write now instead of at its stop grace, so a slow client ends with it. A
  // session waiting on the pool has none pending and is not affected.
  void cut_slow_clients();

  // The process-wide connection limit: the accept loop reserves a place for each session,
  // and detach() gives it back.
  connection_limit& limit() noexcept { return limit_; }

  // The process-wide budget for unfinished writes: each session reserves a response's bytes
  // while it writes them, and sheds new heavy requests while the budget is exceeded.
  write_budget& budget() noexcept { return budget_; }
  const write_budget& budget() const noexcept { return budget_; }

  // Partner of the store in stop(). Relaxed: a session that reads false while stop() runs
  // is told again through session::stop(), posted after the store (the post orders it).
  bool stopping() const noexcept { return stopping_.load(std::memory_order_relaxed); }
  // KNIT_MODE=multi: N threads run the io_context (see the header comment).
  bool multi_thread() const noexcept { return threading_.multi(); }
  const io_threading& threading() const noexcept { return threading_; }
  const server_config& config() const noexcept { return cfg_; }
  heavy_placement& placement() noexcept { return placement_; }
  request_counters& counters() noexcept { return counters_; }
  const request_counters& counters() const noexcept { return counters_; }
  // Heavy calls refused, by reason (the placement's ledger: heavy_outcome.hpp).
  rejection_counters& rejected() noexcept { return placement_.ledger().rejected(); }
  const rejection_counters& rejected() const noexcept { return placement_.ledger().rejected(); }
  // Responses by route and code, and their latency, for /metrics (request_metrics.hpp).
  request_metrics& metrics() noexcept { return metrics_; }
  const request_metrics& metrics() const noexcept { return metrics_; }
  // Refusals and stuck calls with their times, for the readiness policy (health_events.hpp).
  health_events& health() noexcept { return placement_.ledger().health(); }
  const health_events& health() const noexcept { return placement_.ledger().health(); }
  // KNIT_IO=uring: the loop's ring, through which the sessions read their heads and write
  // their responses (io_ring.hpp); null where the loop runs Asio's epoll alone. Set once by
  // host_loop, before start().
  void use_ring(io_ring* ring) noexcept { ring_ = ring; }
  io_ring* ring() const noexcept { return ring_; }
  // Null when the operations endpoints are not served (see the constructor).
  const process_status* status() const noexcept { return status_; }
  std::size_t connections() const;

  // The bytes every open connection holds in its buffers (see session::buffered_bytes):
  // summed when asked (on SIGUSR1), so requests pay nothing for it.
  // In multi mode each connection's figure is the one it published after its last request
  // (session::buffered_bytes).
  std::size_t buffered_bytes() const;

  // GET /ping's body at `now`, i.e. routes::ping_body("knit", now), from the cache
  // (ping_cache.hpp). Valid until the calling thread's next call.
  const std::string& ping_body(std::chrono::system_clock::time_point now) {
    return ping_cache_.body(now);
  }

  // Called by session::run() and session's destructor. attach() returns false, and keeps
  // nothing, once the server is stopping: that session closes without a response. detach()
  // also gives back the session's place in limit(), which every session holds.
  bool attach(session& s);
  void detach(session& s);

 private:
  boost::asio::ip::tcp::endpoint listen_on(std::uint16_t port, bool share_port);
  // sessions_mutex_ (io_threading::lock).
  std::unique_lock<std::mutex> lock() const { return threading_.lock(sessions_mutex_); }
  void start_sweep();
  void on_sweep(boost::system::error_code ec);

  boost::asio::io_context& io_;
  const server_config& cfg_;
  const io_threading threading_;
  heavy_placement& placement_;
  connection_limit& limit_;
  write_budget& budget_;
  request_counters counters_;
  request_metrics metrics_;
  const process_status* status_;
  io_ring* ring_ = nullptr;
  ping_cache ping_cache_;
  listener listener_;
  mutable std::mutex sessions_mutex_;      // guards the four below
  std::unordered_set<session*> sessions_;  // every open connection, for stop() and the sweep
  boost::asio::steady_timer sweep_timer_;
  bool sweeping_ = false;  // a sweep wait is pending
  std::function<void()> drained_;
  std::chrono::milliseconds sweep_period_;
  // Set once by stop(), under sessions_mutex_ in multi mode, so that attach() cannot miss it.
  // Partner: the relaxed load in stopping().
  std::atomic<bool> stopping_{false};
};

}  // namespace knit_server

// The SIGINT/SIGTERM path bounded by KNIT_STOP_TIMEOUT_MS: drain if possible, give up at the
// deadline, flush the 503s.
//
// Protocol (begin(), from the first stop signal; the deadline is signal + stop_timeout), over
// every host's server at once (server_group.hpp):
//   1. server::stop(): no new connections; every session finishes its request and closes
//      (server.hpp). Once the last one of every host is gone: `done`, a clean stop.
//   2. At the deadline, if connections remain: every pending read and write is cancelled
//      (server::cut_slow_clients: the stop grace ends now), then, with a pool, each host
//      gives up its own calls on its own loop (give_up_on_hosts; knit::pool_host::give_up,
//      since a call's handler runs only on its host's thread): every call still pending
//      fails at once with errc::cancelled, the running ones included (results dropped,
//      their workers retired), so every session still waiting on the pool answers 503 +
//      Retry-After (pool_placement); each host reports back here what it gave up. The
//      pool itself is shut down later by main, from its own thread (main.cpp, step 7).
//   3. The loop keeps running for at most kFlushWindow more, to write those 503s and let the
//      connections close; then `done`, whether or not they have.
// `done` runs exactly once, on executor(); the caller stops the loop and exits, with code 3
// and describe() when abandoned() (main.cpp).
// Without step 2 a task that never returns would keep the process alive forever; without
// the bound in 3 a client that never reads its 503 would. With stop_timeout zero there is
// no deadline: steps 2 and 3 never happen (stuck detection still frees stuck calls).
// This runs on the control thread, which runs no connection, so the deadline holds even
// while every host is busy in an inline route that will not end.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <knit/knit.hpp>

#include "loops/server_group.hpp"

namespace knit_server {

class stop_deadline {
 public:
  // Step 3's bound: stop_timeout + kFlushWindow stays within the promised stop_timeout + 1 s,
  // with room for the pool's shutdown and the process exit.
  static constexpr std::chrono::milliseconds kFlushWindow{500};

  // Both must outlive this object. `io` is the control thread's own loop, run by that thread
  // only. Call begin() from executor(), where every handler of this object runs (main.cpp
  // runs the signal handlers there too).
  stop_deadline(boost::asio::io_context& io, server_group& servers,
                std::chrono::milliseconds stop_timeout);

  stop_deadline(const stop_deadline&) = delete;
  stop_deadline& operator=(const stop_deadline&) = delete;

  // With a pool: how step 2 gives up the pool's calls. `give_up(report)` must have every
  // host give up its own calls on its thread and call `report` there with what it gave up
  // (host_threads::give_up_pool_calls). Before begin().
  using report_sink = std::function<void(const knit::shutdown_report&)>;
  void give_up_on_hosts(std::function<void(report_sink)> give_up) {
    give_up_on_hosts_ = std::move(give_up);
  }

  // Starts the stop (step 1) and arms the deadline. A second call does nothing.
  void begin(std::function<void()> done);

  bool begun() const noexcept { return begun_; }

  // Where begin(), the deadline's handlers and `done` run.
  const boost::asio::any_io_executor& executor() const noexcept { return executor_; }

  // The stop deadline, for the pool's own shutdown after a clean drain; max() when
  // stop_timeout is zero (no bound) or before begin().
  std::chrono::steady_clock::time_point deadline() const noexcept { return deadline_; }

  // True once step 2 has run: the server had not drained by the deadline, and the hosts
  // gave up their pool calls (the caller must not expect a clean drain any more).
  bool passed() const noexcept { return passed_; }

  // Step 2 ran and gave something up: a pool call (its client got 503) or a connection
  // still open when `done` ran. The exit code says so (main.cpp).
  bool abandoned() const noexcept {
    return passed_ &&
           (report_.cancelled_at_deadline + report_.abandoned_running + connections_left_ > 0);
  }

  // What the hosts gave up at the deadline (all zero if step 2 did not run): the sum of the
  // reports that came back before `done`.
  const knit::shutdown_report& report() const noexcept { return report_; }

  // One line naming what was abandoned, e.g. "the stop timeout (500 ms) passed: cancelled
  // 0 calls not started ..., 1 connections still open". Meaningful once `done` has run.
  std::string describe() const;

 private:
  void on_deadline(const boost::system::error_code& ec);
  void finish();

  server_group& servers_;
  std::function<void(report_sink)> give_up_on_hosts_;  // with a pool
  std::chrono::milliseconds stop_timeout_;
  boost::asio::any_io_executor executor_;  // the control loop's; see executor()
  boost::asio::steady_timer timer_;  // the deadline (step 2), then the flush window's end (step 3)
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::time_point::max();
  std::function<void()> done_;
  knit::shutdown_report report_;
  std::size_t connections_left_ = 0;  // open connections when `done` ran
  bool begun_ = false;
  bool passed_ = false;
  bool finished_ = false;
};

}  // namespace knit_server

// The bounded stop: server::stop, then at the deadline every host gives up its pool calls, and a
// short window flushes the 503s.
#include "stop/stop_deadline.hpp"

#include <utility>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

namespace knit_server {

namespace net = boost::asio;
using clock_type = std::chrono::steady_clock;

stop_deadline::stop_deadline(net::io_context& io, server_group& servers,
                             std::chrono::milliseconds stop_timeout)
    : servers_(servers),
      stop_timeout_(stop_timeout),
      // One thread runs the control loop: finish() and on_deadline() never overlap.
      executor_(io.get_executor()),
      timer_(executor_) {}

void stop_deadline::begin(std::function<void()> done) {
  if (begun_) return;
  begun_ = true;
  done_ = std::move(done);
  // The deadline counts from the signal, so it is armed before anything else happens.
  if (stop_timeout_.count() > 0) {
    deadline_ = clock_type::now() + stop_timeout_;
    timer_.expires_at(deadline_);
    timer_.async_wait([this](const boost::system::error_code& ec) { on_deadline(ec); });
  }
  // Step 1. `drained` is posted (never called inside stop()), after the last session is gone,
  // from whichever loop's thread closed the last connection; bring it to executor().
  servers_.stop([this] { net::dispatch(executor_, [this] { finish(); }); });
}

void stop_deadline::on_deadline(const boost::system::error_code& ec) {
  if (ec || finished_) return;  // cancelled by finish(): the server drained in time
  // The last session has gone and its `drained` is on its way (posted): nothing to give up.
  if (servers_.connections() == 0) return;

  // Step 2. Slow clients first (posted to each loop before the give-ups): cutting them after
  // would cut the 503 writes the give-ups start, each on its loop.
  passed_ = true;
  servers_.cut_slow_clients();
  if (give_up_on_hosts_) {
    // Each host reports from its own thread; the sum is kept here, on executor(). A report
    // that comes after finish() is too late for describe(): the exit code is 3 already.
    give_up_on_hosts_([this](const knit::shutdown_report& r) {
      net::post(executor_, [this, r] {
        report_.cancelled_at_deadline += r.cancelled_at_deadline;
        report_.abandoned_running += r.abandoned_running;
      });
    });
  }

  // Step 3. finish() comes from `drained` if every connection closes sooner.
  timer_.expires_after(kFlushWindow);
  timer_.async_wait([this](const boost::system::error_code& flush_ec) {
    if (!flush_ec) finish();
  });
}

void stop_deadline::finish() {
  if (finished_) return;
  finished_ = true;
  timer_.cancel();
  connections_left_ = servers_.connections();
  std::exchange(done_, nullptr)();
}

std::string stop_deadline::describe() const {
  return "the stop timeout (" + std::to_string(stop_timeout_.count()) +
         " ms, KNIT_STOP_TIMEOUT_MS) passed: " + report_.describe() + ", " +
         std::to_string(connections_left_) + " connections still open";
}

}  // namespace knit_server

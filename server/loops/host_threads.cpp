// The host threads' start-up handshake, their loop (and multi mode's helpers), and their
// two-step end (host_threads.hpp).
#include "loops/host_threads.hpp"

#include <exception>
#include <optional>
#include <utility>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include "knit/loop_slice.hpp"

namespace knit_server {

namespace net = boost::asio;
using tcp = net::ip::tcp;

host_threads::~host_threads() {
  if (finished_) return;  // the loops are gone: nothing left to stop
  stop();
  finish();
}

tcp::endpoint host_threads::start(std::uint16_t port) {
  hosts_.push_back(std::make_unique<host>());
  host& h = *hosts_.back();
  // The promise belongs to the thread, which fulfils it and lets it go on its own side.
  std::promise<tcp::endpoint> listening;
  std::future<tcp::endpoint> bound = listening.get_future();
  std::future<void> may_destroy = h.may_destroy.get_future();
  try {
    h.thread = std::thread([this, &h, port, listening = std::move(listening),
                            may_destroy = std::move(may_destroy)]() mutable {
      run_host(h, port, listening, may_destroy);
    });
    return bound.get();
  } catch (...) {
    // That host never built its loop, or has already destroyed it: at most the thread is
    // left, ending.
    if (h.thread.joinable()) h.thread.join();
    hosts_.pop_back();
    throw;
  }
}

void host_threads::run_host(host& h, std::uint16_t port, std::promise<tcp::endpoint>& listening,
                            std::future<void>& may_destroy) {
  std::optional<host_loop> loop;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> keep_running;
  std::vector<std::thread> helpers;  // multi mode: the loop's other io threads
  // KNIT_HEAVY_SHARE: the workers gave up weight; a short slice lets this loop, woken by a
  // request, preempt the worker running on its CPU at once. A refusal (a kernel before 6.12,
  // a seccomp filter) keeps the default slice; the banner says so (loop_slice_now()).
  if (shared_.pool) {
    const unsigned share = shared_.pool->options().heavy_share;
    if (share > 0 && share < 100) knit::request_loop_slice();
  }
  try {
    loop.emplace(shared_);  // 1. built on this thread, which is to run it
    // One loop never sets SO_REUSEPORT: a second server started on a taken port must fail
    // to listen, not take half of the first one's connections.
    const tcp::endpoint bound =
        shared_.cfg.hosts > 1 ? loop->srv().listen_shared(port) : loop->srv().listen();
    keep_running.emplace(loop->io().get_executor());
    // Before the accept loop starts: if one cannot be started, no connection exists yet and
    // the loop can go with this thread.
    for (int i = 1; i < shared_.io_threads; ++i) {
      helpers.emplace_back([this, &loop] { loop->run(err_); });
    }
    loop->srv().start();
    h.loop = &*loop;  // published to the caller by set_value (the future's synchronization)
    listening.set_value(bound);
  } catch (...) {
    if (loop) loop->io().stop();
    for (std::thread& t : helpers) t.join();
    listening.set_exception(std::current_exception());
    return;  // the loop, if built, goes with this thread; nothing else has seen it
  }
  loop->run(err_);  // 2. until stop()
  for (std::thread& t : helpers) t.join();
  may_destroy.wait();  // 3. main has decided to end with destructors
}

void host_threads::post(std::size_t i, std::function<void(host_loop&)> fn) {
  host_loop* loop = hosts_[i]->loop;
  boost::asio::post(loop->io(), [loop, fn = std::move(fn)] { fn(*loop); });
}

void host_threads::give_up_pool_calls(std::function<void(const knit::shutdown_report&)> report) {
  for (const auto& h : hosts_) {
    host_loop* loop = h->loop;
    boost::asio::post(loop->io(), [loop, report] { report(loop->give_up_pool_calls()); });
  }
}

void host_threads::stop() noexcept {
  if (finished_) return;  // the loops have been destroyed
  for (const auto& h : hosts_) h->loop->io().stop();
}

void host_threads::finish() {
  if (finished_) return;
  finished_ = true;
  for (const auto& h : hosts_) h->may_destroy.set_value();
  for (const auto& h : hosts_) h->thread.join();
}

}  // namespace knit_server

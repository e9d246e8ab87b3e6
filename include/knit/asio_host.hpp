// knit/asio_host.hpp: the pool on a Boost.Asio io_context. asio_host drains completions on
// the host's io_context.
//
// How the loop learns about results: the pool's completion eventfd is wrapped in a
// posix::stream_descriptor and waited on with async_wait(wait_read) only while calls are
// pending, so an idle pool keeps no work on the io_context (run() can return), and a busy
// one costs one eventfd read per batch of results (the workers coalesce their writes). A
// loop that waits somewhere else (an io_uring) may take that watch over
// (hand_over_completion_watch) and call completions_ready() when the descriptor fires.
// Deadlines (call_options::timeout) are enforced by one steady_timer on the earliest one.
// With lending on (pool_options::lend_after) that timer is left armed when the pool goes
// idle if it fires within lend_after: a loop serving a stream of calls then re-arms it
// once per lend_after rather than once per idle period (a timerfd_settime each), and its
// io_context is released at most lend_after after its last call.
// With pool_options::wake_at_turn_end it holds the checks (and, with workers that share the
// loop's CPU, the wake-ups) its submits would issue and posts one flush per turn of the
// io_context, which runs before the io_context next blocks (pool::hold_wakes).
// It attaches its thread as a host (knit::pool_host), on any thread, and leaves when
// destroyed.
#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "knit/pool.hpp"
#include "knit/pool_host.hpp"

namespace knit {

/// @brief Delivers a knit::pool's completions on a Boost.Asio io_context.
///
/// The pool's handlers run on the thread that runs the io_context, which must be the thread
/// that built this asio_host: this attaches it as a host of the pool (knit::pool_host: its
/// own eventfd, calls and admission; the workers are shared) until the asio_host is
/// destroyed, the same way on every thread. While calls are pending, asio_host
/// keeps one wait on the pool's completion eventfd and one steady_timer on the earliest deadline;
/// with nothing pending it keeps no work on the io_context, so io_context::run() returns (with
/// lending on, pool_options::lend_after, up to lend_after later: the timer's last wait). Use
/// knit::async_run for an Asio asynchronous operation over it; use submit() for a plain
/// knit::result callback.
class asio_host {
 public:
  /// Binds `p`'s completions to `io`. Both must outlive this object; construct it on the
  /// thread that runs `io`, which it attaches as a host (knit::pool_host, which also says
  /// how the pool's building thread is taken over; its std::logic_error if it cannot be).
  asio_host(boost::asio::io_context& io, pool& p)
      : host_(std::in_place, p), state_(std::make_shared<state>(io, p)) {
    if (p.options().wake_at_turn_end) state_->holds_wakes = p.hold_wakes(true);
  }

  /// Stops watching: pending waits are cancelled (their handlers see the state closed and
  /// do nothing), and the host leaves here (knit::pool_host: calls not started are
  /// cancelled, running ones drained, their handlers run on this thread). Destroy it on its
  /// own thread.
  ~asio_host() {
    state_->closed = true;
    boost::system::error_code ignored;
    state_->timer.cancel();
    state_->fd.cancel(ignored);
    if (state_->holds_wakes) state_->pool_->hold_wakes(false);  // rings what is owed
    host_.reset();  // the leave runs handlers, which may still use this object's state
  }

  asio_host(const asio_host&) = delete;
  asio_host& operator=(const asio_host&) = delete;

  /// pool::submit, plus arming the io_context watch. `handler(knit::result<R>)` runs on the
  /// io_context thread. Returns errc::queue_full / errc::shut_down without calling it (and
  /// without moving from `fn`, `arg` or `handler`); otherwise an empty error_code, and
  /// `*id` (if given) names the call for pool::cancel(). Host thread only: on any other
  /// thread, another asio_host's included, it throws std::logic_error (the call would be
  /// registered with that thread's host and answered on its loop, not on `io`).
  template <class Fn, class Arg, class Handler>
  [[nodiscard]] std::error_code submit(Fn&& fn, Arg&& arg, Handler&& handler,
                                       call_options options = {}, call_id* id = nullptr) {
    if (!on_its_thread()) {
      throw std::logic_error(
          "knit::asio_host::submit: called off the thread that built this asio_host (each "
          "event loop submits through its own asio_host)");
    }
    std::error_code ec = state_->pool_->submit(std::forward<Fn>(fn), std::forward<Arg>(arg),
                                               std::forward<Handler>(handler), options, id);
    if (!ec) {
      if (state_->holds_wakes) post_flush(state_);
      arm_read(state_);
      if (needs_timer(options)) arm_timer(state_);
    }
    return ec;
  }

  /// knit::pool_host::give_up: for a stop deadline, every call of this host not finished
  /// gets errc::cancelled now.
  shutdown_report give_up() { return host_->give_up(); }

  /// Whether the calling thread is the one that built this host (the thread that runs its
  /// io_context). Any thread may ask.
  bool on_its_thread() const noexcept { return thread_ == std::this_thread::get_id(); }

  /// Hands the watch on this host's completion descriptor to the caller's own loop (one that
  /// waits in an io_uring, say, and polls the descriptor there at no system call per wake):
  /// from now on asio_host no longer waits on it through Asio's reactor (no epoll_ctl per
  /// armed wait, no epoll_wait per wake), and the loop calls completions_ready() on this
  /// thread each time the watch fires, and leaves reading it to the drain. `watch` says how
  /// the loop watches it: completion_watch::each_write for an io_uring multishot poll (the
  /// drain then never reads the eventfd, one system call fewer per wake), readiness for a
  /// watch that fires while it is readable (poll(2), a one-shot poll re-armed at once: the
  /// drain reads it). Returns the descriptor, owned by the pool and valid while this
  /// asio_host lives. Host thread only (std::logic_error elsewhere); once, before the first
  /// submit (std::logic_error after). The deadline timer stays Asio's, and run() no longer
  /// returns by itself while the loop watches (the loop's own watch is its work).
  int hand_over_completion_watch(completion_watch watch) {
    if (!on_its_thread()) {
      throw std::logic_error(
          "knit::asio_host::hand_over_completion_watch: called off the thread that built this "
          "asio_host");
    }
    if (state_->watched_elsewhere || state_->read_armed || state_->pool_->pending() > 0) {
      throw std::logic_error(
          "knit::asio_host::hand_over_completion_watch: once, before the first submit");
    }
    state_->watched_elsewhere = true;
    state_->watch = watch;
    // Out of Asio's epoll set too: registered there (edge-triggered), each write would still
    // wake Asio's reactor for nothing.
    boost::system::error_code ignored;
    state_->fd.close(ignored);
    return state_->pool_->completion_fd();
  }

  /// For a loop that took the watch (hand_over_completion_watch): the completion descriptor
  /// became readable. Delivers what is waiting (pool::drain), on this thread; a wake reported
  /// from inside that drain (a handler that ran the loop) is drained again when it returns.
  void completions_ready() {
    if (state_->draining) {
      state_->ready_again = true;
      return;
    }
    do {
      state_->ready_again = false;
      on_wakeup(state_);
    } while (state_->ready_again && !state_->closed);
  }

  /// The pool whose completions this host delivers.
  pool& get_pool() noexcept { return *state_->pool_; }
  /// The io_context the completions are delivered on.
  boost::asio::io_context& context() noexcept { return state_->io; }

 private:
  struct state {
    state(boost::asio::io_context& context, pool& p)
        : io(context), pool_(&p), fd(context, ::dup(p.completion_fd())), timer(context) {}
    boost::asio::io_context& io;
    pool* pool_;
    boost::asio::posix::stream_descriptor fd;  // a dup: closing it leaves the pool's fd alone
    boost::asio::steady_timer timer;
    bool read_armed = false;
    bool timer_armed = false;
    std::chrono::steady_clock::time_point timer_at{};
    bool closed = false;
    bool watched_elsewhere = false;  // hand_over_completion_watch: the caller's loop polls fd
    // How the fd is watched: Asio's own wait fires while it is readable (the drain reads it).
    completion_watch watch = completion_watch::readiness;
    bool ready_again = false;   // completions_ready came inside a drain
    bool draining = false;      // on_wakeup's pool::drain is under way (a handler may run io)
    bool holds_wakes = false;   // pool::hold_wakes said yes at construction
    bool flush_posted = false;  // a flush is queued on io for this turn
  };

  // Held checks (and wakes): one flush per turn. Posted from the io_context's own thread, it runs
  // after the handlers already queued and before the io_context blocks again (a posted handler is
  // pending work: run() polls, not waits, while one is queued).
  static void post_flush(const std::shared_ptr<state>& s) {
    if (s->flush_posted) return;
    try {
      boost::asio::post(s->io, [s] {
        s->flush_posted = false;
        if (!s->closed) s->pool_->flush_wakes();
      });
      s->flush_posted = true;
    } catch (const std::bad_alloc&) {
      s->pool_->flush_wakes();  // no memory to post it: ring now
    }
  }

  static void after_drain(const std::shared_ptr<state>& s) {
    // A handler in that drain may have destroyed this asio_host (and left the pool): then
    // this thread is no host any more, and nothing of the pool may be asked here.
    if (s->closed) return;
    if (s->pool_->pending() > 0) arm_read(s);
    arm_timer(s);
  }

  static void arm_read(const std::shared_ptr<state>& s) {
    if (s->read_armed || s->closed || s->watched_elsewhere) return;
    s->read_armed = true;
    s->fd.async_wait(boost::asio::posix::descriptor_base::wait_read,
                     [s](const boost::system::error_code& ec) {
                       s->read_armed = false;
                       if (ec || s->closed) return;
                       on_wakeup(s);
                     });
  }

  // A drain for a wake-up (the fd or the timer), then the watches it leaves needed. One
  // that fires inside a drain (a handler ran the io_context: poll, run_one) is left to that
  // drain, whose after_drain re-arms: nested, pool::drain returns 0 without reading the
  // eventfd, so a wait re-armed then would find it still readable and fire at once, again
  // and again, and the handler's poll() would never return.
  static void on_wakeup(const std::shared_ptr<state>& s) {
    if (s->draining) return;
    s->draining = true;
    try {
      s->pool_->drain(s->watch);
    } catch (...) {  // a handler threw: out to io.run()'s caller, who may run it again
      s->draining = false;
      after_drain(s);
      throw;
    }
    s->draining = false;
    after_drain(s);
  }

  // Whether a call just submitted with `options` may need the timer earlier than it is
  // armed. Its earliest moment is its own deadline (timeout) or, once it runs, its stuck
  // limit, which cannot come before now + stuck_after (it has not started yet). An armed
  // timer that fires no later than that already covers it: the drain it triggers re-arms
  // for what is left. So a steady stream under a pool-wide stuck_after costs one clock read
  // per submit, not a pool::next_deadline() scan of every worker's current call.
  // With lending on (pool_options::lend_after), a call queued behind long calls may make
  // the pool lend a worker at once (src/lent_workers.cpp): the timer is re-armed from
  // next_deadline() unless it fires now already.
  bool needs_timer(const call_options& options) const {
    const auto stuck = options.stuck_after.count() > 0 ? options.stuck_after
                                                       : state_->pool_->options().stuck_after;
    const bool timed = options.timeout.count() > 0;
    const bool lends = state_->pool_->options().effective_lent_limit() > 0;
    if (!timed && stuck.count() <= 0 && !lends) return false;  // nothing of this call's to time
    if (!state_->timer_armed) return true;
    const auto now = std::chrono::steady_clock::now();
    if (lends && state_->timer_at > now) return true;
    auto earliest = std::chrono::steady_clock::time_point::max();
    if (timed) earliest = now + options.timeout;
    if (stuck.count() > 0) earliest = std::min(earliest, now + stuck);
    return earliest < state_->timer_at;
  }

  static void arm_timer(const std::shared_ptr<state>& s) {
    if (s->closed) return;
    const auto next = s->pool_->next_deadline();
    if (!next) {
      if (s->timer_armed && !keeps_idle_timer(*s)) {  // nothing left to time: release io
        s->timer_armed = false;
        s->timer.cancel();
      }
      return;
    }
    if (s->timer_armed && s->timer_at <= *next) return;
    s->timer_armed = true;
    s->timer_at = *next;
    s->timer.expires_at(*next);
    s->timer.async_wait([s](const boost::system::error_code& ec) {
      // Cancelled (closed, no deadline left, or re-armed for an earlier one): the newer
      // wait, if any, owns timer_armed now.
      if (ec || s->closed) return;
      s->timer_armed = false;
      on_wakeup(s);
    });
  }

  // Nothing left to time, the timer armed: whether to leave it to fire (and find nothing)
  // instead of cancelling it. Under lending a stream of calls arms it at each submit to an
  // idle pool (its first call waits for a worker until one takes it: lent_workers.cpp) and
  // cancelled it at each idle moment, a timerfd_settime per request at a few thousand a
  // second; left armed, the next call finds it armed earlier than it needs and the drain
  // it fires re-arms once. Bounded by lend_after, so a stuck_after or a deadline far away
  // never holds the io_context.
  static bool keeps_idle_timer(const state& s) {
    const pool_options& o = s.pool_->options();
    if (o.effective_lent_limit() == 0) return false;
    return s.timer_at <= std::chrono::steady_clock::now() + o.lend_after;
  }

  std::optional<pool_host> host_;  // this thread as a host; reset first in the destructor
  std::shared_ptr<state> state_;
  std::thread::id thread_ = std::this_thread::get_id();  // the host thread: set once, read only
};

}  // namespace knit

// call: the record of one submitted call, allocated by the host, carried through the
// rings by pointer.
// The task, its argument, its result and the completion handler all live in it, so the
// rings move its pointer (a job-ring slot is the pointer and its sequence) and nothing is
// copied.
//
// Lifecycle (state word; the host owns the record throughout, workers borrow it):
//   host: construct, state = queued, push pointer into a worker's job_ring
//   worker: CAS queued -> running; run(); store done (release); hand the pointer back
//           through its seat's done ring to that host, or the host's completion list. A
//           worker that loses the CAS (abandoned) hands it back unrun.
//   host: cancel/deadline: CAS queued -> abandoned and deliver the error at once; a running
//         call is delivered timed_out and its late result discarded when it comes back.
//   host: takes the pointer from a done ring or its list; delivers the result if not yet
//         delivered; destroys the record. A record is destroyed only after it came back,
//         so no worker can still hold it.
//   stuck: the host CASes running -> stuck and delivers errc::stuck at once; the record
//         then never comes back: the retired worker hands it over through its slot's
//         handoff flag when run() returns, and whoever comes second of the pool and that
//         worker destroys it (src/worker_seats.cpp, "Retiring a worker").
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <system_error>
#include <type_traits>
#include <utility>

#include "knit/result.hpp"

namespace knit {

/// Names an accepted call for pool::cancel(); 0 = no call.
using call_id = std::uint64_t;

/// @brief Per-call settings, passed to pool::submit() (or asio_host::submit, async_run).
struct call_options {
  /// Deadline measured from submit(), so queue wait counts; when it passes the handler gets
  /// errc::timed_out at once (a running call finishes and its result is discarded).
  /// Zero = none.
  std::chrono::steady_clock::duration timeout{0};
  /// Running longer than this = stuck (see pool_options::stuck_after). Zero = the pool's.
  std::chrono::steady_clock::duration stuck_after{0};
};

namespace detail {

// stuck: the host gave up on a running call (stuck_after, or shutdown's deadline) and
// retired its worker; the worker's CAS running -> done then fails, which tells it to hand
// the record over (src/worker_seats.cpp, "Retiring a worker") and exit.
enum class call_state : std::uint8_t { queued, running, done, abandoned, stuck };

class call_base {
 public:
  call_base() = default;
  call_base(const call_base&) = delete;
  call_base& operator=(const call_base&) = delete;

  // Worker: run the task, keep the value or the exception inside the record. Never throws.
  virtual void run() noexcept = 0;
  // Host: call the handler once, with the stored result (ec empty) or with ec.
  virtual void deliver(std::error_code ec) noexcept = 0;
  // Host: destroy the handler now, on the host thread, once the call is answered before
  // its record comes back (cancelled, past its deadline, stuck). A stuck call's record may
  // later be destroyed by its retired worker thread, perhaps after the pool and the host's
  // event loop are gone; a skipped one may come back long after, waking no host. A
  // handler's captures (an Asio work guard, a connection) belong to the host and must go
  // when the call is answered. The worker never touches the handler.
  virtual void drop_handler() noexcept = 0;
  // Host: destroy in place (memory is returned by the pool's allocator).
  virtual void destroy() noexcept = 0;

  // Writers: the host (queued -> abandoned, running -> stuck) and the claiming worker
  // (queued -> running, running -> done), each by CAS; partner: the other side's CAS. The
  // CAS decides who wins between a worker starting (or finishing) the call and the host
  // abandoning it (or declaring it stuck); src/call_state.hpp lists and checks the moves.
  std::atomic<call_state> state{call_state::queued};

  // Host-only bookkeeping (workers never touch these).
  call_id id = 0;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::int64_t stuck_after_ns = 0;  // 0 = never stuck
  bool delivered = false;           // the handler has been called
  // Written by the worker in run(), read by the host after the record came back through
  // a done ring or its completion list (whose release/acquire publishes it).
  bool threw = false;
  // Written by the worker (how long run() took, ns), read by the host after the record
  // came back: feeds the host's estimate of a call's duration (dispatch).
  std::uint64_t run_ns = 0;
  std::uint32_t block_size = 0;  // allocator bookkeeping: 0 = heap
  // The seat whose ring of its host carried it (kNoRing: none, a process call): set by the
  // host before the push, read by the host when the record comes back.
  static constexpr std::uint32_t kNoRing = ~std::uint32_t{0};
  std::uint32_t ring = kNoRing;
  // Its host's completion list (src/host_state.hpp): written by the worker before
  // its release CAS, read by the host after its acquire exchange.
  call_base* next_done = nullptr;

 protected:
  ~call_base() = default;
};

template <class Fn, class Arg, class Handler>
class call final : public call_base {
  using raw_result = std::invoke_result_t<Fn&, Arg&&>;
  using value_type = std::conditional_t<std::is_void_v<raw_result>, unit, raw_result>;

 public:
  call(Fn fn, Arg arg, Handler handler)
      : fn_(std::move(fn)), arg_(std::move(arg)), handler_(std::in_place, std::move(handler)) {}

  void run() noexcept override {
    try {
      if constexpr (std::is_void_v<raw_result>) {
        fn_(std::move(arg_));
        value_.emplace();
      } else {
        value_.emplace(fn_(std::move(arg_)));
      }
    } catch (...) {
      exception_ = std::current_exception();
      threw = true;
    }
  }

  void deliver(std::error_code ec) noexcept override {
    // A handler that throws would unwind through the host's loop from inside drain();
    // that is a bug in the handler, so it terminates rather than corrupting the pool.
    if (ec) {
      (*handler_)(result<value_type>(ec));
    } else if (exception_) {
      (*handler_)(result<value_type>(make_error_code(errc::task_failed), exception_));
    } else {
      (*handler_)(result<value_type>(std::move(*value_)));
    }
  }

  void drop_handler() noexcept override { handler_.reset(); }

  void destroy() noexcept override { this->~call(); }

  // The function it runs (pool::submit reads a process call's job from it).
  const Fn& function() const noexcept { return fn_; }

 private:
  Fn fn_;
  Arg arg_;
  std::optional<Handler> handler_;  // emptied by drop_handler() once a call is answered early
  std::optional<value_type> value_;
  std::exception_ptr exception_;
};

}  // namespace detail
}  // namespace knit

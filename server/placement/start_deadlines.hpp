// The queue-wait deadline: a heavy call that a worker has not started within
// KNIT_MAX_QUEUE_WAIT_MS of its submit is refused (503) instead of run, whatever admission
// control expected of it.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>

#include <knit/call.hpp>

namespace knit_server {

// Why a deadline on top of admission's estimate (admission.hpp): the estimate is only as good
// as what the pool has measured. A cold server has no call time yet (0 until a call comes
// back), and even a primed one measured its calls uncontended, so the first burst of a flood
// is admitted whole. Measured on 2 CPUs (bench/results/regressions-2cpu, section 2): 300
// connections sending /ssr (2 ms) at once, the burst's last calls waited up to ~1 s against a
// 250 ms bound (accepted p99 435-1,030 ms), while every call sent after the first second
// waited at most 319 ms. A cap on the calls ahead of a cold server would bound that too, but
// it would refuse all but `threads` calls of a real burst of cheap calls; a deadline costs a
// cheap call nothing (it starts long before it), and bounds an accepted call's wait whatever
// the estimate said. The refusal comes late (the client waited the deadline for its 503),
// which is why it is the backstop and the estimate stays the rule: the default deadline,
// 1.4 x KNIT_MAX_QUEUE_MS, lies above the 1.2 x that steady-state waits reach under the
// estimate, so only the calls admitted without a fitting estimate are shed.
//
// The mechanism: each call that finds every worker busy (one that finds a worker free does not
// queue: its start is that worker's wake) is added here before its submit and named with its
// call_id after it, and the placement keeps one timer on the earliest deadline; when it fires,
// every call due is given up with knit::pool::cancel, which succeeds only for a call no worker
// has started (a running call runs to its end: starting is what the deadline bounds).
// Deadlines are due in submit order (one limit for every call), so a FIFO holds them; an entry
// leaves from the front when its call is done or its deadline has been checked, so the FIFO
// spans at most the calls submitted within one limit.
//
// Host thread only (not thread-safe); a pure function of the ids, times and give_up answers
// it is fed, so it can be tested without a pool.
class start_deadlines {
 public:
  using clock = std::chrono::steady_clock;

  // `limit` > 0: how long a call may wait for a worker.
  explicit start_deadlines(std::chrono::nanoseconds limit) noexcept : limit_(limit) {}

  // A call `id` submitted at `now` (not before the previous one's `now`). Returns its
  // ticket, which done() takes.
  std::uint64_t add(knit::call_id id, clock::time_point now);

  // Names the call of `ticket`, added before its submit (with id 0) so that the completion
  // handler can hold the ticket and nothing that may throw comes after the submit. Only
  // before expire() could reach it, i.e. on the host thread right after the submit.
  void name(std::uint64_t ticket, knit::call_id id) noexcept;

  // The call of `ticket` completed (any outcome): its deadline no longer matters.
  void done(std::uint64_t ticket) noexcept;

  // Gives up on every call whose deadline is at or before `now`, oldest first:
  // `give_up(call_id)` returns true if it refused the call (it had not started) and false if
  // the call was running or finished. Each call is handed to give_up at most once, and it
  // has left the FIFO before (give_up may add calls). Returns how many were refused.
  template <class GiveUp>
  std::size_t expire(clock::time_point now, GiveUp&& give_up);

  // The earliest deadline still to check; nullopt when no call is tracked.
  std::optional<clock::time_point> next_due() const noexcept {
    if (fifo_.empty()) return std::nullopt;
    return fifo_.front().due;
  }

  // Calls tracked: not known to be complete, deadline not yet checked.
  std::size_t size() const noexcept { return fifo_.size(); }

 private:
  struct entry {
    knit::call_id id;
    clock::time_point due;
    bool done;
  };
  void drop_done_front() noexcept;

  std::chrono::nanoseconds limit_;
  std::deque<entry> fifo_;   // in submit order, so in deadline order
  std::uint64_t front_ = 0;  // the ticket of fifo_.front()
};

template <class GiveUp>
std::size_t start_deadlines::expire(clock::time_point now, GiveUp&& give_up) {
  std::size_t refused = 0;
  while (!fifo_.empty() && fifo_.front().due <= now) {
    const knit::call_id id = fifo_.front().id;
    fifo_.pop_front();
    ++front_;
    if (give_up(id)) ++refused;  // may run a handler that calls add() or done()
    drop_done_front();
  }
  return refused;
}

}  // namespace knit_server

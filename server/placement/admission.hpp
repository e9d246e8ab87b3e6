// Admission control for the heavy routes: accept a call, or answer 503 at once because it would
// wait too long.
//
// The estimate below is the rule; an accepted call's wait is bounded by a second, coarser one
// whatever the estimate says: a call not started within KNIT_MAX_QUEUE_WAIT_MS (1.4 x
// KNIT_MAX_QUEUE_MS by default) is refused then (start_deadlines.hpp), which catches what the
// estimate cannot see, the burst a cold server admits before any call has come back.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace knit_server {

// The pool's measured service interval: the mean time between two completions while every
// worker was busy, i.e. 1 / throughput under saturation.
//
// Why throughput and not the run time of one call: a worker that shares its CPU with the
// host and the other workers is preempted in the middle of calls (scheduler slices are
// milliseconds), so a 76 us call can report a wall run time of several ms, and dividing by
// the worker count assumes the workers run in parallel, which they do not when they share
// a CPU. Measured on 2 CPUs (server, host and 2 workers pinned to one of them, 80% of the
// inline ceiling), the per-call rule over-predicted the wait by more than 6x and refused 249
// of about 279,000 heavy calls while the accepted p99 was 40 ms. The interval between
// completions of a saturated pool already includes preemption, host contention and
// everything else that slows the pool down.
//
// An interval counts only when the pool was saturated all through it: right after the
// earlier completion, at least `threads` calls were still pending, so a queued call took
// the freed worker at once (pending only grows between two completions). The estimate is
// the mean of the last `window` such intervals (total time / count), which the host seeing
// completions in batches (one long interval, then several near 0) does not disturb. It is
// not aged: after a quiet spell the last saturated period's figure is used, the best guess
// for the next one.
//
// Host thread only (not thread-safe); a pure function of the timestamps it is fed.
class service_meter {
 public:
  using clock = std::chrono::steady_clock;
  static constexpr std::size_t window = 64;  // intervals averaged

  // A call completed at `now`, leaving `pending_after` calls accepted and not completed in
  // a pool of `threads` workers. `now` must not go backwards.
  void on_completion(clock::time_point now, std::size_t pending_after,
                     std::size_t threads) noexcept;

  // Mean of the saturated intervals in the window; 0 until the first one.
  std::chrono::nanoseconds interval() const noexcept;

  // Saturated intervals seen so far (the window holds the last `window` of them).
  std::uint64_t samples() const noexcept { return samples_; }

 private:
  std::array<std::int64_t, window> ring_{};  // interval lengths in ns, oldest overwritten
  std::int64_t sum_ = 0;                     // sum of the ring's valid entries
  std::uint64_t samples_ = 0;
  clock::time_point last_{};
  bool saturated_since_last_ = false;  // the previous completion left >= threads pending
};

// What the pool looks like to a call about to be submitted.
struct queue_state {
  std::size_t ahead = 0;    // calls accepted and not yet completed (knit::pool::pending())
  std::size_t threads = 1;  // the pool's workers
  std::chrono::nanoseconds call_time{0};  // expected run time of one call (0 = not known yet)
  // service_meter::interval(): the saturated pool's time per completion (0 = not measured
  // yet; then call_time / threads stands in for it).
  std::chrono::nanoseconds service_interval{0};
};

// The settings (server_config::max_queue_delay and max_queued).
struct admission_policy {
  // A call whose expected wait exceeds this is refused; 0 = no delay rule.
  std::chrono::milliseconds max_queue_delay{250};
  // A call that would find this many calls ahead of it is refused, whatever the estimate
  // says: the backstop while the estimate is still 0 (no call has come back yet) or wrong.
  // 0 = no count rule.
  std::size_t max_queued = 4096;
};

enum class admission {
  accept,
  reject_delay,  // expected wait over max_queue_delay
  reject_count,  // max_queued calls already ahead
};

// The time a new call is expected to wait before a worker starts it. While fewer than
// `threads` calls are ahead a worker is free: 0. Otherwise the call starts after
// ahead - threads + 1 more completions: that many service intervals, or, before the meter
// has a sample, that many call_time / threads. `ahead` includes the calls now running,
// which errs on the safe side for admission.
std::chrono::nanoseconds expected_wait(const queue_state& q) noexcept;

// The decision, a pure function of its arguments so it can be tested without a pool.
admission decide_admission(const queue_state& q, const admission_policy& policy) noexcept;

}  // namespace knit_server

// KNIT_MODE=auto's per-route rule: run a heavy route inline while its measured cost is small, on
// the pool once it is not.
//
// The rule (one offload_policy per route, host thread only; no clock, no pool: the caller
// measures and reports):
//   1. Where: a route starts on the pool (an unknown cost is assumed expensive, the side that
//      cannot hold /ping up), moves inline once the running average of its measured cost
//      falls below leave_pool_ns = 3/5 × T, and back to the pool once it rises above
//      enter_pool_ns = T (KNIT_AUTO_INLINE_US). Between the two it stays where it is, so a
//      route whose cost sits near T does not flap between the two paths.
//   2. What is measured: the thread CPU time of the job, on whichever thread ran it (the
//      host inline, a worker on the pool). Reading that clock is a syscall (~0.3-1 µs), so
//      only a sample of calls is measured: 1 in kInlineSamplePeriod inline (the host pays
//      for it), 1 in kPooledSamplePeriod on the pool (a worker pays; sampled more often so
//      that a route that became cheap comes back sooner). The first call is always measured.
//   3. The average: an exponentially weighted moving average with weight 1/kEwmaDivisor per
//      sample, each sample capped at kSampleCapFactor × T; the first sample sets it outright.
//      The cap keeps one slow call (measured on a loaded 2-CPU box: a 76 µs sample of a 3 µs
//      route) from sending a cheap route to the pool.
// Bounds that follow (the unit tests check them): a route that costs S > T moves to the pool
// after at most n samples with (7/8)^n < (S' - T) / (S' - avg), S' = min(S, 4 T): two samples
// (32 calls) from a 1 µs average for any S ≥ 4 T; a cheap route that starts on the pool is
// inline after its first sample when that sample is below 3/5 T.
#pragma once

#include <cstdint>
#include <stdexcept>

#include "config.hpp"

namespace knit_server {

// KNIT_AUTO_INLINE_US: T, in microseconds (read through server/settings/, whose table holds
// its default and range). The native-cost sweep (2 CPUs, server on one):
// inline wins below a 5 µs route (152,928 vs 112,655 rps at 0 µs), ties at 5 µs, and the pool
// wins from 10 µs on (+30% at 10 µs, 2x at 20 µs). T = 10 puts the way back inline (3/5 T) at
// 6 µs, above the native routes' cost as a worker measures it: a worker sharing the host's CPU
// measured /jwt at 4-6 µs where the host measured 3.3-3.6 µs, so with T = 6 (exit 3.6 µs) /jwt
// started on the pool and never left it (bench/results/regressions-2cpu).
struct offload_options {
  static constexpr std::uint32_t kDefaultInlineUs = 10;
  static constexpr std::uint32_t kMaxInlineUs = 1'000'000;  // 1 s: anything above is a typo
  std::uint32_t inline_below_us = kDefaultInlineUs;
};

class offload_policy {
 public:
  static constexpr std::uint32_t kInlineSamplePeriod = 16;
  static constexpr std::uint32_t kPooledSamplePeriod = 4;
  static constexpr std::int64_t kEwmaDivisor = 8;
  static constexpr std::uint64_t kSampleCapFactor = 4;

  // What to do with the call about to start.
  struct decision {
    bool pooled = true;    // submit it to the pool (else run it inline)
    bool measure = false;  // measure its thread CPU time and record() it
  };

  explicit offload_policy(std::uint32_t inline_below_us) noexcept
      : enter_pool_ns_(std::uint64_t{inline_below_us} * 1000),
        leave_pool_ns_(enter_pool_ns_ * 3 / 5) {}

  // Where the next call will go, without counting it (admission control asks this first:
  // it applies only to calls that go to the pool).
  bool pooled() const noexcept { return pooled_; }

  // The call about to start: counts it under its path and says whether to measure it.
  decision next() noexcept;

  // One measured call's thread CPU time. May move the route to the other path.
  void record(std::uint64_t cpu_ns) noexcept;

  // The average the rule uses (samples capped at 4 T).
  std::uint64_t average_ns() const noexcept { return static_cast<std::uint64_t>(average_ns_); }
  bool has_average() const noexcept { return samples_ > 0; }
  std::uint64_t inline_calls() const noexcept { return inline_calls_; }
  std::uint64_t pooled_calls() const noexcept { return pooled_calls_; }
  std::uint64_t switches() const noexcept { return switches_; }  // path changes so far
  std::uint64_t enter_pool_ns() const noexcept { return enter_pool_ns_; }
  std::uint64_t leave_pool_ns() const noexcept { return leave_pool_ns_; }

 private:
  std::uint64_t enter_pool_ns_;
  std::uint64_t leave_pool_ns_;
  std::int64_t average_ns_ = 0;
  std::uint64_t samples_ = 0;
  std::uint32_t since_sample_ = 0;  // calls since the last measured one; 0 = measure the next
  bool pooled_ = true;
  std::uint64_t inline_calls_ = 0;
  std::uint64_t pooled_calls_ = 0;
  std::uint64_t switches_ = 0;
};

}  // namespace knit_server

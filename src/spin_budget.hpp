// spin_budget: how long one worker's next idle period may spin, learned from the gaps
// between the calls of a stream, so a stream whose calls come a little further apart than
// the base budget is still caught by a spin and its host never pays a wake-up.
//
// A gap is one idle period that began when a call ended and ended when the next call showed
// up (the worker's doorbell rang, or work was seen before it parked). After each gap:
//   gap <= kStretch * base  ->  budget = clamp(gap + gap / 4, base, kStretch * base)
//   gap >  kStretch * base  ->  budget = base                     (calls too far apart)
// and a park that ran out (park_ms) puts the budget back to base. A spin that catches a
// call keeps the budget. So a steady stream whose gap sits between the base and kStretch
// times it spins across its gaps, and a stream that stops costs at most one spin of
// kStretch * base (100 µs with the default 50 µs), then nothing.
//
// Why a margin of a quarter: gaps in a stream jitter (timer slack, the host's own work);
// with no margin about half the next gaps would be a little longer than the last and miss.
// Why a ceiling: a spin is the worker's CPU bought to save the host a wake-up (~10 µs of
// the host's CPU on the 2-vCPU VM this was measured on, most of it the IPI) and the call
// the wake's latency. Spinning a 50 µs gap instead of parking saved the host 1.6 µs per
// call and cost the process 15 µs more in all (docs/design.md, "Calls a little further
// apart"): worth it only because the host is the serial part. The ceiling bounds what one
// idle period can spend that way.
//
// Decisions only: no clocks, no atomics. Each worker owns one (worker.cpp), and uses it
// only where the spin gate applies (the default budget); an explicit spin_us is obeyed.
#pragma once

#include <algorithm>
#include <cstdint>

namespace knit::detail {

class spin_budget {
 public:
  static constexpr std::uint64_t kStretch = 2;

  explicit spin_budget(std::uint64_t base_ns) noexcept : base_(base_ns), budget_(base_ns) {}

  // This idle period's budget, in ns: between base and kStretch * base.
  std::uint64_t ns() const noexcept { return budget_; }
  std::uint64_t ceiling_ns() const noexcept { return base_ * kStretch; }

  // A call showed up gap_ns after the call before it ended.
  void call_arrived_after(std::uint64_t gap_ns) noexcept {
    budget_ = gap_ns <= ceiling_ns() ? std::clamp(gap_ns + gap_ns / 4, base_, ceiling_ns()) : base_;
  }

  // A park ran out with nothing to do: whatever stream there was has stopped.
  void park_timed_out() noexcept { budget_ = base_; }

 private:
  const std::uint64_t base_;
  std::uint64_t budget_;
};

}  // namespace knit::detail

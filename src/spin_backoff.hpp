// spin_backoff: one worker's memory of whether its recent spins paid, so an idle pool or a
// slow trickle of calls costs no spin while a back-to-back stream keeps its spinner.
//
// A spin pays only if a call arrives within the budget. After kMissesBeforeBackoff misses
// in a row the worker skips spinning for the next 1, 2, 4, ... idle periods (it parks at
// once), at most kMaxSkip, the count doubling with each further miss. Any catch resets it:
// a spin that caught a call, or a skipped period that would have caught one (the worker
// found work before it could park, or its doorbell rang within the spin budget). A steady
// stream whose calls come sooner than the budget therefore never backs off, and a trickle
// slower than the budget spins about once per kMaxSkip + 1 idle periods.
//
// Decisions only: no clocks, no atomics. Each worker owns one (worker.cpp); a replacement
// worker starts afresh.
#pragma once

#include <algorithm>
#include <cstdint>

namespace knit::detail {

class spin_backoff {
 public:
  static constexpr unsigned kMissesBeforeBackoff = 2;
  static constexpr std::uint32_t kMaxSkip = 64;

  // Called once per idle period that would spin: false = skip this one (park at once).
  bool should_spin() noexcept {
    if (skip_ == 0) return true;
    --skip_;
    return false;
  }

  // A spin, or a skipped period, that caught (or would have caught) a call.
  void caught() noexcept {
    misses_ = 0;
    skip_ = 0;
  }

  // A spin that ran out of budget with nothing to do.
  void missed() noexcept {
    if (misses_ < kSaturate) ++misses_;
    if (misses_ >= kMissesBeforeBackoff) {
      const unsigned doublings = std::min(misses_ - kMissesBeforeBackoff, kMaxDoublings);
      skip_ = std::uint32_t{1} << doublings;
    }
  }

  unsigned misses_in_a_row() const noexcept { return misses_; }
  std::uint32_t periods_to_skip() const noexcept { return skip_; }

 private:
  static constexpr unsigned kMaxDoublings = 6;  // 2^6 == kMaxSkip
  static constexpr unsigned kSaturate = 64;
  static_assert(std::uint32_t{1} << kMaxDoublings == kMaxSkip);

  unsigned misses_ = 0;
  std::uint32_t skip_ = 0;
};

}  // namespace knit::detail

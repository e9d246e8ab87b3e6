// The deadlines' clock (loops/coarse_clock.hpp): steady_clock's time line, a tick behind.
#include <chrono>

#include <gtest/gtest.h>

#include "loops/coarse_clock.hpp"

namespace {

using namespace std::chrono_literals;
using knit_server::coarse_steady_now;
using steady = std::chrono::steady_clock;

// A deadline set from coarse_steady_now() is compared with steady_clock::now() by the sweep:
// both must be the same clock. The coarse one is never ahead of it, and behind it by no more
// than a tick (4 ms at HZ=250); the bound below allows for a tick the kernel skipped on an
// idle CPU and for this thread being preempted between the reads, and still fails for any
// other clock (the wall clock is decades ahead, a wrong unit orders of magnitude off).
TEST(coarse_clock, is_steady_clock_at_most_a_tick_behind) {
  for (int i = 0; i < 1000; ++i) {
    const steady::time_point before = steady::now();
    const steady::time_point coarse = coarse_steady_now();
    const steady::time_point after = steady::now();
    ASSERT_LE(coarse, after) << "read " << i;
    ASSERT_GE(coarse, before - 100ms) << "read " << i;
  }
}

TEST(coarse_clock, moves_forward) {
  // A deadline set later is never earlier: the clock does not go back.
  steady::time_point last = coarse_steady_now();
  for (int i = 0; i < 100000; ++i) {
    const steady::time_point now = coarse_steady_now();
    ASSERT_GE(now, last) << "read " << i;
    last = now;
  }
}

}  // namespace

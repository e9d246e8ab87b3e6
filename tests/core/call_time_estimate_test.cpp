// The host's estimate of one call's run time (pool::call_time_estimate, an EWMA of the run
// times the workers measure): it follows the calls that ran, and a worker's idle time
// between two calls never counts as run time. The worker reads the clock once per call
// when it goes straight from one call to the next (the end of one stands for the start of
// the next, src/worker.cpp); after a spin or a park it reads it afresh.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "knit/pool.hpp"
#include "support/pool_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using knit_test::drain_until;

TEST(call_time_estimate, follows_the_calls_that_ran) {
  knit::pool p;
  EXPECT_EQ(p.call_time_estimate().count(), 0) << "no call has come back yet";
  int done = 0;
  for (int i = 0; i < 20; ++i) {
    ASSERT_FALSE(p.submit(
        [](int) {
          std::this_thread::sleep_for(2ms);
          return 0;
        },
        i, [&](knit::result<int>) { ++done; }));
    ASSERT_TRUE(drain_until(p, [&] { return done == i + 1; }));
  }
  // Each call slept at least 2 ms; the EWMA of their run times cannot be below that by more
  // than its first samples' weight allows (it starts from 0: 1 - (7/8)^20 = 93% of 2 ms).
  EXPECT_GE(p.call_time_estimate(), 1800us);
}

// Busy-polls `p` (poll() never resets the doorbell, so after the first result the workers
// write the eventfd no more: nothing but the idle time comes between two calls) until
// `done` or 30 s.
bool poll_until(knit::pool& p, const bool& done) {
  const auto limit = std::chrono::steady_clock::now() + 30s;
  while (!done && std::chrono::steady_clock::now() < limit) p.poll();
  return done;
}

// A call claimed after the worker parked for a second: its start is read then, not taken
// from the end of the call before. Fails if the worker keeps that end across its park (the
// second would count as the call's run time: the estimate >= 1 s / 8 = 125 ms).
TEST(call_time_estimate, a_park_between_two_calls_is_not_run_time) {
  knit::pool_options o;
  o.threads = 1;
  knit::pool p(o);
  for (int i = 0; i < 3; ++i) {
    bool done = false;
    ASSERT_FALSE(p.submit([](int x) { return x; }, i, [&](knit::result<int>) { done = true; }));
    ASSERT_TRUE(poll_until(p, done));
    if (i == 1) {
      std::this_thread::sleep_for(1s);  // past the spin: the worker parks
      ASSERT_GE(p.stats().workers.at(0).parks, 1u);
    }
  }
  EXPECT_LT(p.call_time_estimate(), 50ms)
      << "three empty calls; the worker's second asleep counted as run time";
}

}  // namespace

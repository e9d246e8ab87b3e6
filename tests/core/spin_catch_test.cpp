// A call caught by a spin: the worker leaves its state word at spinning until it has
// claimed the record (worker.cpp, execute: a locked instruction would otherwise wait for
// that store, whose line the host reads), and must then say running. Dispatch's first
// choice is a *spinning* worker with an empty ring, so a worker left at spinning while it
// runs would get the next call queued behind the one it runs.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

#include "knit/pool.hpp"
#include "support/gate.hpp"
#include "support/pool_helpers.hpp"

namespace {

using knit_test::drain_until;
using knit_test::eventually;
using knit_test::gate;
using knit_test::opens_on_exit;
using namespace std::chrono_literals;

std::uint64_t spin_hits_of(const knit::pool_stats& s, unsigned w) {
  return s.workers.at(w).spin_hits;
}

TEST(spin_catch, a_worker_running_a_caught_call_is_not_offered_the_next_one) {
  knit::pool_options o;
  o.threads = 2;
  o.spin_us = 1000;    // explicit: every worker may spin, whatever the machine's CPUs
  o.max_spinners = 1;  // so the worker that did not catch the call parks
  o.doorbell = false;  // and nobody wakes it: it parks park_ms at a time
  o.park_ms = 200;
  o.steal = false;  // nor takes a call queued behind the caught one
  // Declared before the pool: a handler may still run while it shuts down after a failed
  // ASSERT.
  bool warm = false, held_done = false, next_done = false;
  knit::pool p(o);
  // A call submitted right after one completes is caught by that worker's spin unless the
  // spin ran out first (a preempted host): then the round is tried again.
  for (int attempt = 0; attempt < 50; ++attempt) {
    warm = held_done = next_done = false;
    ASSERT_FALSE(p.submit([](int x) { return x; }, 0, [&](knit::result<int>) { warm = true; }));
    ASSERT_TRUE(drain_until(p, [&] { return warm; }));
    const knit::pool_stats before = p.stats();
    auto g = std::make_shared<gate>();
    const opens_on_exit rescue{g};  // a failed ASSERT must not leave the held call waiting
    ASSERT_FALSE(p.submit(
        [g](int) {
          g->wait();
          return 0;
        },
        0, [&](knit::result<int>) { held_done = true; }));
    while (g->waiting.load() == 0) std::this_thread::yield();
    const knit::pool_stats caught = p.stats();
    int catcher = -1;
    for (unsigned w = 0; w < 2; ++w) {
      if (spin_hits_of(caught, w) > spin_hits_of(before, w)) catcher = static_cast<int>(w);
    }
    if (catcher < 0) {  // taken at a park's end, not by a spin: another round
      g->open = true;
      ASSERT_TRUE(drain_until(p, [&] { return held_done; }));
      continue;
    }
    // The peer parks next (for park_ms): then dispatch chooses between a parked worker and
    // the catcher, which runs a call longer than any so far (of unknown length).
    const unsigned peer = 1 - static_cast<unsigned>(catcher);
    const std::uint64_t parks = caught.workers.at(peer).parks;
    ASSERT_TRUE(eventually([&] { return p.stats().workers.at(peer).parks > parks; }));
    ASSERT_FALSE(
        p.submit([](int x) { return x; }, 1, [&](knit::result<int>) { next_done = true; }));
    const bool done_while_held = drain_until(
        p, [&] { return next_done; }, 10s);
    g->open = true;
    ASSERT_TRUE(drain_until(p, [&] { return held_done && next_done; }));
    EXPECT_TRUE(done_while_held) << "the next call was queued behind the caught one: "
                                 << knit::to_json(p.stats());
    return;
  }
  GTEST_SKIP() << "no call was caught by a spin in 50 rounds (a preempted host each time)";
}

}  // namespace

// Forced interleavings of lending (src/lent_workers.cpp, "Guarantee"): the lent worker has
// found nothing and is on its way out; it pauses there (src/fault_injection.hpp,
// interleaving_hook) while its host pushes a call and runs its lend decision inside that
// window, every run, instead of a loop that hits it by luck.
//   Before the leaving store, the host sees the worker between calls and lends none; just
//   after it, with the limit reached, it can lend none either: in both only the worker's
//   re-check of the rings after its fence can take the call (without it the worker ends
//   and the call waits, every run). With a free slot the host sees leaving and lends a
//   fresh worker. The fence itself cannot be forced this way: the pause orders the host's
//   push before the re-check, so the reordering it forbids (the leaving store still in the
//   store buffer while the rings are read) never happens here; lend_stress_test runs the
//   unforced race under ThreadSanitizer.
// And the host's wake for calls queued behind a held worker while a peer sleeps ("Held
// calls"), forced the same way at the worker's claimed_not_started point.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>

#include "fault_injection.hpp"
#include "knit/pool.hpp"
#include "support/gate.hpp"
#include "support/interleaving_pause.hpp"
#include "support/pool_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using knit::detail::interleaving_point;
using knit_test::drain_until;
using knit_test::eventually;
using knit_test::gate;

using knit_test::go;
using knit_test::opens_on_exit;
using knit_test::pause_at;
using knit_test::paused;

knit::pool_options one_worker_lending(unsigned lent) {
  knit::pool_options o;
  o.threads = 1;
  // Long enough that B's own run never looks held (a second lend in the set-up).
  o.lend_after = 20ms;
  o.max_lent_workers = lent;
  return o;
}

// The seat's worker is held in A (on `g`); B, queued behind it, makes the host lend a
// worker, which runs B, finds nothing more and pauses at `where` (armed by the caller).
void lend_one_and_let_it_pause(knit::pool& p, const std::shared_ptr<gate>& g) {
  ASSERT_FALSE(p.submit(
      [g](int x) {
        g->wait();
        return x;
      },
      1, [](knit::result<int>) {}));
  ASSERT_TRUE(eventually([&] { return g->waiting.load() == 1; }, 10s));
  bool b = false;
  ASSERT_FALSE(p.submit([](int x) { return x; }, 2, [&b](knit::result<int> r) { b = r.ok(); }));
  ASSERT_TRUE(drain_until(
      p, [&] { return b && paused.load(); }, 10s));
  ASSERT_EQ(p.stats().lent_workers_started, 1u);
}

// C, pushed inside the window; `runs` counts its runs, `done` its delivery.
void submit_c(knit::pool& p, const std::shared_ptr<std::atomic<int>>& runs, bool& done) {
  ASSERT_FALSE(p.submit(
      [runs](int x) {
        ++*runs;
        return x;
      },
      3, [&done](knit::result<int> r) { done = r.ok() && r.value() == 3; }));
}

// The host decides inside the window at `where` with the limit (1) reached: it lends none,
// so the paused worker's re-check must take C before it ends.
void only_the_recheck_takes_the_call(interleaving_point where) {
  auto g = std::make_shared<gate>();
  knit::pool p(one_worker_lending(1));
  const opens_on_exit open_g{g};
  const pause_at pause(where);
  ASSERT_NO_FATAL_FAILURE(lend_one_and_let_it_pause(p, g));
  auto runs = std::make_shared<std::atomic<int>>(0);
  bool c_done = false;
  ASSERT_NO_FATAL_FAILURE(submit_c(p, runs, c_done));
  p.drain();  // the host's lend decision, inside the window
  EXPECT_EQ(p.stats().lent_workers_started, 1u) << "the host lent no other worker";
  go = true;
  // Without draining (a drain would lend a fresh worker for C): either the worker took C,
  // or it ended without it.
  ASSERT_TRUE(eventually(
      [&] {
        const auto s = p.stats();
        return runs->load() == 1 || s.lent_workers_retired == s.lent_workers_started;
      },
      10s));
  EXPECT_EQ(runs->load(), 1) << "the lent worker left past the call its host pushed as it went";
  ASSERT_TRUE(drain_until(
      p, [&] { return c_done; }, 10s));
  EXPECT_EQ(runs->load(), 1);
  g->open = true;
  ASSERT_TRUE(eventually(
      [&] {
        const auto s = p.stats();
        return s.lent_workers_now == 0 && s.lent_workers_retired == s.lent_workers_started;
      },
      10s));
}

TEST(lend_interleavings, host_decides_before_the_lent_worker_stores_leaving) {
  only_the_recheck_takes_the_call(interleaving_point::lent_found_nothing);
}

TEST(lend_interleavings, host_decides_between_the_leaving_store_and_the_recheck) {
  only_the_recheck_takes_the_call(interleaving_point::lent_leaving);
}

// The other side of the guarantee: the host sees the paused worker leaving and, with a
// slot free, lends a fresh worker at once, which runs C while the first is still paused.
TEST(lend_interleavings, host_sees_leaving_and_lends_a_fresh_worker) {
  auto g = std::make_shared<gate>();
  knit::pool p(one_worker_lending(2));
  const opens_on_exit open_g{g};
  const pause_at pause(interleaving_point::lent_leaving);
  ASSERT_NO_FATAL_FAILURE(lend_one_and_let_it_pause(p, g));
  auto runs = std::make_shared<std::atomic<int>>(0);
  bool c_done = false;
  ASSERT_NO_FATAL_FAILURE(submit_c(p, runs, c_done));
  p.drain();
  EXPECT_EQ(p.stats().lent_workers_started, 2u) << "the host saw leaving and lent another";
  ASSERT_TRUE(drain_until(
      p, [&] { return c_done; }, 10s))
      << "the fresh worker ran C";
  go = true;
  g->open = true;
  ASSERT_TRUE(eventually(
      [&] {
        const auto s = p.stats();
        return s.lent_workers_now == 0 && s.lent_workers_retired == 2;
      },
      10s));
  EXPECT_EQ(runs->load(), 1) << "C ran once: the fresh worker took it, the re-check found none";
}

// Held calls (src/lent_workers.cpp), forced: worker 0 has taken A and not yet stamped its
// start when the host pushes B, so dispatch sees it between calls and queues B behind A
// (dispatch_policy.hpp, rule 2); A is then held on its gate while worker 1 sleeps. Once A
// has been held for lend_after, the host's drain wakes worker 1, which steals B; nothing is
// lent, as a worker was free. Without that wake B waits for A, every run.
TEST(lend_interleavings, a_call_queued_behind_a_held_one_wakes_a_sleeping_peer) {
  knit::pool_options o;
  o.threads = 2;
  o.spin_us = 0;  // nobody spins: only a wake brings worker 1
  o.lend_after = 20ms;
  auto g = std::make_shared<gate>();
  knit::pool p(o);
  const opens_on_exit open_g{g};
  ASSERT_TRUE(eventually(
      [&] {
        const auto s = p.stats();
        return s.workers[0].parks >= 1 && s.workers[1].parks >= 1;
      },
      10s));
  bool b = false;
  {
    const pause_at pause(interleaving_point::claimed_not_started);
    ASSERT_FALSE(p.submit(
        [g](int x) {
          g->wait();
          return x;
        },
        1, [](knit::result<int>) {}));
    ASSERT_TRUE(eventually([] { return paused.load(); }, 10s));
    ASSERT_FALSE(p.submit([](int x) { return x; }, 2, [&b](knit::result<int> r) { b = r.ok(); }));
  }  // go: worker 0 stamps A's start and is held in it
  ASSERT_TRUE(eventually([&] { return g->waiting.load() == 1; }, 10s));
  EXPECT_TRUE(drain_until(
      p, [&] { return b; }, 10s))
      << "B waited behind the held call while a worker slept";
  const knit::pool_stats s = p.stats();
  EXPECT_EQ(s.workers[1].calls_stolen, 1u) << "B was not queued behind A";
  EXPECT_EQ(s.lent_workers_started, 0u) << "a worker was lent while one slept";
  g->open = true;
}

}  // namespace

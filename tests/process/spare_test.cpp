// A spare child per worker (process_options::spare_child): once a worker's child is taken,
// one more is started and kept idle, so a crash, a kill or a stuck call is replaced by a
// child that was up before it happened (the next call pays no spawn), a new spare follows,
// and the pool's end leaves no child, spare or not. Run on the host ring and, with the
// proxy_path/ prefix, on the proxy path: both take their replacement from the same box.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>

#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/process_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using knit_test::children_of_this_process;
using knit_test::run_one;
using knit_test::within_10s;

class process_spare_test : public testing::Test {
 protected:
  void SetUp() override {
    saved_ = knit_test::test_process_options();
    knit::process_options options;
    options.crash_loop_crashes = 100;  // no backoff, unless a test sets its own
    options.spare_child = true;
    knit_test::use_process_options(options);
    base_ = knit::current_process_stats();
    for (const auto& c : children_of_this_process()) earlier_.insert(c.pid);
  }
  void TearDown() override { knit_test::use_process_options(saved_); }

  // This test's children (zombies too when `zombies`).
  std::set<int> children(bool zombies) const {
    std::set<int> pids;
    for (const auto& c : children_of_this_process()) {
      if ((zombies || c.state != 'Z') && !earlier_.contains(c.pid)) pids.insert(c.pid);
    }
    return pids;
  }
  // This test's live worker processes (knit-proc-N, not zombies).
  std::set<int> live_workers() const {
    std::set<int> pids;
    for (int pid : children(false)) {
      if (knit_test::process_comm(pid).starts_with("knit-proc-")) pids.insert(pid);
    }
    return pids;
  }
  // Two live workers, `kept` among them and `gone` not, and no zombie.
  bool two_live_with(int kept, int gone) const {
    const std::set<int> now = live_workers();
    return now.size() == 2 && now.contains(kept) && !now.contains(gone) && children(true) == now;
  }
  // Children that finished their handshake in this test: a child is in /proc (named
  // knit-proc-N) before it has, so a wait for a new one waits for this count too.
  std::uint64_t started() const { return since(&knit::process_stats::children_started); }
  std::uint64_t since(std::uint64_t knit::process_stats::*field) const {
    return knit::current_process_stats().*field - base_.*field;
  }
  // The pid a call answers from, after one call made the worker take its child: that
  // child's pid, once its spare is up beside it (two live workers, no zombie).
  int first_call_and_spare(knit::pool& pool, int& spare) {
    auto first = run_one(pool, "pid", "");
    EXPECT_TRUE(first.ok()) << knit::failure_message(first);
    if (!first.ok()) return 0;
    const int pid = std::stoi(first.value());
    EXPECT_TRUE(within_10s([&] {
      return live_workers().size() == 2 && children(true) == live_workers() && started() == 2;
    })) << "no spare beside the worker's child";
    spare = 0;
    for (int p : live_workers()) {
      if (p != pid) spare = p;
    }
    return pid;
  }

  knit::process_options saved_;
  knit::process_stats base_;
  std::set<int> earlier_;
};

TEST_F(process_spare_test, the_spare_is_up_beside_the_child_a_worker_took) {
  knit::pool pool(knit_test::threads(1));
  knit::process_workers workers(pool);
  int spare = 0;
  const int pid = first_call_and_spare(pool, spare);
  ASSERT_NE(pid, 0);
  ASSERT_NE(spare, 0);
  EXPECT_EQ(since(&knit::process_stats::children_started), 2u);
  EXPECT_EQ(since(&knit::process_stats::children_live), 2u);
  // The calls go to the taken child; the spare stays idle.
  for (int i = 0; i < 20; ++i) {
    auto r = run_one(pool, "pid", "");
    ASSERT_TRUE(r.ok()) << knit::failure_message(r);
    EXPECT_EQ(std::stoi(r.value()), pid);
  }
  EXPECT_EQ(since(&knit::process_stats::children_started), 2u) << "a spare per call";
}

// The crash's own call fails; the next call is answered by the spare, a child that was up
// before the crash (without a spare it would be a child started after it), and a new spare
// is started in its place.
TEST_F(process_spare_test, a_crash_is_replaced_by_the_spare_that_was_already_up) {
  knit::pool pool(knit_test::threads(1));
  knit::process_workers workers(pool);
  int spare = 0;
  const int pid = first_call_and_spare(pool, spare);
  ASSERT_NE(spare, 0);
  auto crash = run_one(pool, "segv", "");
  ASSERT_EQ(crash.error(), knit::errc::worker_crashed) << knit::failure_message(crash);
  auto next = run_one(pool, "pid", "");
  ASSERT_TRUE(next.ok()) << knit::failure_message(next);
  EXPECT_EQ(std::stoi(next.value()), spare) << "the call after the crash took a new child";
  ASSERT_TRUE(within_10s([&] { return two_live_with(spare, pid) && started() == 3; }))
      << "no new spare, or the crashed child left a zombie";
  EXPECT_EQ(since(&knit::process_stats::crashes), 1u);
  EXPECT_EQ(since(&knit::process_stats::children_started), 3u);
  EXPECT_EQ(since(&knit::process_stats::respawned), 1u);
}

// A SIGKILL from outside to the running child, between calls: the same.
TEST_F(process_spare_test, a_killed_child_is_replaced_by_the_spare) {
  knit::pool pool(knit_test::threads(1));
  knit::process_workers workers(pool);
  int spare = 0;
  const int pid = first_call_and_spare(pool, spare);
  ASSERT_NE(spare, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  // Once the starter has reaped it (no zombie), the worker's next call finds it dead and
  // takes the spare; no call fails. (A call sent before the death is seen fails with it.)
  ASSERT_TRUE(within_10s([&] { return !children(true).contains(pid); }));
  auto next = run_one(pool, "pid", "");
  ASSERT_TRUE(next.ok()) << knit::failure_message(next);
  EXPECT_EQ(std::stoi(next.value()), spare);
  ASSERT_TRUE(within_10s([&] { return two_live_with(spare, pid) && started() == 3; }))
      << "no new spare, or the killed child left a zombie";
}

// The spare itself killed while it idles: reaped and started again; the calls never see it.
TEST_F(process_spare_test, a_killed_spare_is_reaped_and_started_again) {
  knit::pool pool(knit_test::threads(1));
  knit::process_workers workers(pool);
  int spare = 0;
  const int pid = first_call_and_spare(pool, spare);
  ASSERT_NE(spare, 0);
  ASSERT_EQ(::kill(spare, SIGKILL), 0);
  ASSERT_TRUE(within_10s([&] { return two_live_with(pid, spare) && started() == 3; }))
      << "the killed spare was not reaped and started again";
  auto next = run_one(pool, "pid", "");
  ASSERT_TRUE(next.ok()) << knit::failure_message(next);
  EXPECT_EQ(std::stoi(next.value()), pid);
  EXPECT_EQ(since(&knit::process_stats::crashes), 1u);
  EXPECT_EQ(since(&knit::process_stats::children_started), 3u);
}

// The crash loop still holds: a worker whose children keep crashing is degraded, and its
// spare's successor waits out the backoff like any respawn.
TEST_F(process_spare_test, a_crash_loop_still_backs_off) {
  knit::process_options options = knit_test::test_process_options();
  options.crash_loop_crashes = 2;
  // Long enough that a start without backoff (a few ms) shows; short enough to wait for.
  constexpr auto kBackoff = 400ms;
  options.backoff_initial = kBackoff;
  options.backoff_max = kBackoff;
  knit_test::use_process_options(options);
  knit::pool pool(knit_test::threads(1));
  knit::process_workers workers(pool);
  int spare = 0;
  first_call_and_spare(pool, spare);
  ASSERT_NE(spare, 0);
  auto first = run_one(pool, "segv", "");
  ASSERT_EQ(first.error(), knit::errc::worker_crashed);
  // The spare takes the next call and a new one follows (one crash: not degraded yet).
  auto on_spare = run_one(pool, "pid", "");
  ASSERT_TRUE(on_spare.ok()) << knit::failure_message(on_spare);
  EXPECT_EQ(std::stoi(on_spare.value()), spare);
  ASSERT_TRUE(within_10s([&] { return live_workers().size() == 2 && started() == 3; }));
  // The crash loop decides to back off after this instant, so the held-back start cannot
  // come before sent_second + kBackoff: a lower bound, which a slow machine only widens.
  const auto sent_second = std::chrono::steady_clock::now();
  auto second = run_one(pool, "segv", "");
  ASSERT_EQ(second.error(), knit::errc::worker_crashed);
  EXPECT_NE(knit::failure_message(second).find("crash loop"), std::string::npos)
      << knit::failure_message(second);
  EXPECT_EQ(since(&knit::process_stats::degraded_workers), 1u);
  // The spare answers the next call; the one after it starts, but only after the backoff.
  auto next = run_one(pool, "pid", "");
  ASSERT_TRUE(next.ok()) << knit::failure_message(next);
  ASSERT_TRUE(within_10s([&] { return live_workers().size() == 2 && started() == 4; }))
      << "the degraded worker's next spare never started";
  EXPECT_GE(std::chrono::steady_clock::now() - sent_second, kBackoff)
      << "a degraded worker's spare started without backoff";
}

TEST_F(process_spare_test, the_pools_end_leaves_no_child_spare_or_not) {
  {
    knit::pool pool(knit_test::threads(1));
    knit::process_workers workers(pool);
    int spare = 0;
    first_call_and_spare(pool, spare);
    ASSERT_NE(spare, 0);
  }
  EXPECT_TRUE(within_10s([&] { return children(true).empty(); }))
      << children(true).size() << " children left";
  EXPECT_EQ(knit::current_process_stats().children_live, base_.children_live);
}

TEST_F(process_spare_test, off_by_default) { EXPECT_FALSE(knit::process_options{}.spare_child); }

}  // namespace

// Worker processes ready before traffic (knit::process_workers) and replaced at once: every
// child exists and has handshaken when the constructor returns, a worker that cannot start
// fails the constructor with its cause, and after a crash or a kill the replacement is
// started without waiting for a call.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/process_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using knit_test::children_of_this_process;
using knit_test::process_call;
using knit_test::run_calls;
using knit_test::run_one;
using knit_test::within_10s;

// The children of this process (with zombies when `zombies`) not in `except`.
std::set<int> children(const std::set<int>& except, bool zombies) {
  std::set<int> pids;
  for (const auto& c : children_of_this_process()) {
    if ((zombies || c.state != 'Z') && !except.contains(c.pid)) pids.insert(c.pid);
  }
  return pids;
}

class process_ahead_test : public testing::Test {
 protected:
  void SetUp() override {
    knit::process_options options;
    options.crash_loop_crashes = 100;  // no backoff in these tests
    knit_test::use_process_options(options);
    base_ = knit::current_process_stats();
    // A plain run of the binary runs every test in one process: a child left by an earlier
    // test is not this test's.
    earlier_ = children(std::set<int>{}, true);
  }
  // This test's live worker processes (knit-proc-N, not zombies).
  std::set<int> live_workers() const {
    std::set<int> pids;
    for (int pid : children(earlier_, false)) {
      if (knit_test::process_comm(pid).starts_with("knit-proc-")) pids.insert(pid);
    }
    return pids;
  }
  // Every child of this test, zombies included.
  bool no_children() const { return children(earlier_, true).empty(); }
  std::uint64_t live() const {
    return knit::current_process_stats().children_live - base_.children_live;
  }
  std::uint64_t started() const {
    return knit::current_process_stats().children_started - base_.children_started;
  }
  knit::process_stats base_;
  std::set<int> earlier_;
};

TEST_F(process_ahead_test, every_child_is_up_when_the_constructor_returns) {
  knit::pool pool(knit_test::threads(2));
  knit::process_workers workers(pool);
  EXPECT_EQ(workers.count(), 2u);
  // Read right after the constructor: both children exist and finished their handshake.
  EXPECT_EQ(live_workers().size(), 2u);
  EXPECT_EQ(started(), 2u);
  EXPECT_EQ(live(), 2u);
  // Two overlapping calls run on those two children: no call started one.
  const std::set<int> ahead = live_workers();
  std::vector<process_call> calls{{"sleep_pid", "100", std::nullopt},
                                  {"sleep_pid", "100", std::nullopt}};
  ASSERT_TRUE(run_calls(pool, calls));
  std::set<int> served;
  for (auto& c : calls) {
    ASSERT_TRUE(c.result->ok()) << knit::failure_message(*c.result);
    served.insert(std::stoi(c.result->value()));
  }
  EXPECT_EQ(served, ahead);
  EXPECT_EQ(started(), 2u);
}

TEST_F(process_ahead_test, a_worker_that_cannot_start_fails_the_constructor_with_its_cause) {
  knit::process_options options;
  options.worker_executable = "/bin/true";  // exits 0 without calling worker_main
  knit_test::use_process_options(options);
  try {
    knit::pool pool(knit_test::threads(2));
    knit::process_workers workers(pool);
    FAIL() << "started workers that cannot start";
  } catch (const knit::process_error& e) {
    EXPECT_EQ(e.code(), knit::errc::worker_start_failed);
    const std::string what = e.what();
    EXPECT_NE(what.find("knit-proc-"), std::string::npos) << what;
    EXPECT_NE(what.find("exited with code 0 before its handshake"), std::string::npos) << what;
  }
  EXPECT_TRUE(no_children());
  EXPECT_EQ(live(), 0u);
}

// A program that forgets knit::worker_main: its child re-runs main and reaches
// process_workers, where knit stops it (exit 123, one line naming worker_main) before it
// starts a child of its own; the host's error names the cause. Without the stop each child
// started children of its own (a fork storm: ~31,000 copies in 20 s as a user limited to 64
// processes).
TEST_F(process_ahead_test, a_program_without_worker_main_fails_loudly_and_starts_no_grandchild) {
  knit::process_options options;
  options.worker_executable = KNIT_NO_WORKER_MAIN;
  knit_test::use_process_options(options);
  knit::pool pool(knit_test::threads(1));
  try {
    knit::process_workers workers(pool);
    FAIL() << "a worker without worker_main started";
  } catch (const knit::process_error& e) {
    EXPECT_EQ(e.code(), knit::errc::worker_start_failed);
    const std::string what = e.what();
    EXPECT_NE(what.find("exited with code 123 before its handshake"), std::string::npos) << what;
    EXPECT_NE(what.find("does not call knit::worker_main first in main"), std::string::npos)
        << what;
  }
  // Nothing of it is left: the child ended before starting any of its own (a grandchild
  // would be reparented away from this process, so look for the program anywhere).
  EXPECT_TRUE(no_children());
  EXPECT_TRUE(knit_test::all_processes_named("process_no_work").empty())
      << "a copy of the program is still running";
}

TEST_F(process_ahead_test, destroying_it_ends_the_children_no_host_took) {
  knit::pool pool(knit_test::threads(3));
  {
    knit::process_workers workers(pool);
    EXPECT_EQ(live_workers().size(), 3u);
  }
  EXPECT_TRUE(no_children());
  EXPECT_EQ(live(), 0u);
}

// A SIGKILL from outside to an idle child: with no call made, it is reaped (no zombie is
// left waiting for its worker's next call), counted as a crash, and its replacement is up.
TEST_F(process_ahead_test, a_killed_idle_child_is_reaped_and_replaced_without_a_call) {
  knit::pool pool(knit_test::threads(1));
  knit::process_workers workers(pool);
  auto first = run_one(pool, "pid", "");
  ASSERT_TRUE(first.ok()) << knit::failure_message(first);
  const int pid = std::stoi(first.value());
  const auto crashes = [&] { return knit::current_process_stats().crashes - base_.crashes; };
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ASSERT_TRUE(within_10s([&] {
    const std::set<int> now = live_workers();
    return now.size() == 1 && !now.contains(pid) && started() == 2;
  })) << "no replacement without a call";
  // Every child of this test, zombies included: the replacement alone.
  ASSERT_TRUE(within_10s([&] { return children(earlier_, true) == live_workers(); }))
      << "the killed child stays a zombie until a call: " << knit_test::process_state(pid);
  EXPECT_EQ(knit_test::process_state(pid), 0);
  EXPECT_EQ(live(), 1u);
  EXPECT_EQ(crashes(), 1u) << "the idle death is counted without a call";
  const int replacement = *live_workers().begin();
  auto next = run_one(pool, "pid", "");
  ASSERT_TRUE(next.ok()) << knit::failure_message(next);
  EXPECT_EQ(std::stoi(next.value()), replacement);
  EXPECT_EQ(started(), 2u) << "the call after the kill started no child";
  EXPECT_EQ(knit::current_process_stats().respawned - base_.respawned, 1u);
  EXPECT_EQ(crashes(), 1u) << "the next call counted the idle death again";
}

// A child started ahead that no host took yet, killed: replaced too, and reaped.
TEST_F(process_ahead_test, a_killed_child_no_host_took_is_replaced_and_reaped) {
  knit::pool pool(knit_test::threads(1));
  knit::process_workers workers(pool);
  const std::set<int> before = live_workers();
  ASSERT_EQ(before.size(), 1u);
  ASSERT_EQ(::kill(*before.begin(), SIGKILL), 0);
  ASSERT_TRUE(within_10s([&] {
    const std::set<int> now = live_workers();
    return now.size() == 1 && now != before && children(earlier_, true).size() == 1 &&
           started() == 2;
  })) << "not replaced, or the killed one not reaped";
  EXPECT_EQ(started(), 2u);
  EXPECT_EQ(live(), 1u);
}

// A crash during a call: its replacement is started at once, before the next call.
TEST_F(process_ahead_test, a_crashed_child_is_replaced_before_the_next_call) {
  knit::pool pool(knit_test::threads(1));
  knit::process_workers workers(pool);
  const std::set<int> before = live_workers();
  ASSERT_EQ(before.size(), 1u);
  auto crash = run_one(pool, "segv", "");
  ASSERT_EQ(crash.error(), knit::errc::worker_crashed);
  ASSERT_TRUE(within_10s([&] {
    const std::set<int> now = live_workers();
    return now.size() == 1 && now != before && started() == 2;
  })) << "no replacement without a call";
  auto next = run_one(pool, "pid", "");
  ASSERT_TRUE(next.ok()) << knit::failure_message(next);
  EXPECT_EQ(std::stoi(next.value()), *live_workers().begin());
  EXPECT_EQ(started(), 2u);
}

// A stuck call's thread may be retired by the pool and another started in its place; the
// killed child's worker is given back with its replacement started at once, so the call
// after the stuck one, on whichever thread, takes that child and spawns none (before, the
// new thread's first call spawned its own, inside its stuck limit).
TEST_F(process_ahead_test, the_call_after_a_stuck_one_takes_the_replacement_and_spawns_none) {
  knit::pool_options o = knit_test::threads(1);
  o.stuck_after = 200ms;
  knit::pool pool(o);
  knit::process_workers workers(pool);
  auto first = run_one(pool, "pid", "");
  ASSERT_TRUE(first.ok()) << knit::failure_message(first);
  const int pid = std::stoi(first.value());
  const knit::process_stats before = knit::current_process_stats();
  auto stuck = run_one(pool, "sleep_pid", "600000");
  ASSERT_EQ(stuck.error(), knit::errc::stuck) << knit::failure_message(stuck);
  // The kill and the replacement's start, with no call made.
  ASSERT_TRUE(within_10s([&] {
    const std::set<int> now = live_workers();
    return started() == 2 && now.size() == 1 && !now.contains(pid);
  })) << "the stuck call's child was not replaced without a call";
  const int replacement = *live_workers().begin();
  auto next = run_one(pool, "pid", "");
  ASSERT_TRUE(next.ok()) << knit::failure_message(next);
  EXPECT_EQ(std::stoi(next.value()), replacement);
  EXPECT_EQ(started(), 2u) << "the call after the stuck one spawned a child of its own";
  const knit::process_stats after = knit::current_process_stats();
  EXPECT_EQ(after.killed - before.killed, 1u);
  EXPECT_EQ(after.crashes - before.crashes, 0u);
  EXPECT_EQ(after.respawned - before.respawned, 1u);
}

}  // namespace

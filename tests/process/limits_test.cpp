// Process calls past their limits: a call past its deadline or its stuck limit gets
// errc::timed_out / errc::stuck as any call does, and its child is killed and reaped (a
// thread can only be abandoned; a process can be stopped), so a looping task costs its CPU
// only until then. The kill is not a crash: no crash loop, the next call gets a new child.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/process_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using knit_test::process_state;
using knit_test::run_one;

constexpr const char* kHang = "600000";  // sleep_pid's milliseconds: never ends by itself

// Waits (10 s at most) until `pid` is gone (reaped: not even a zombie).
bool gone_within_10s(int pid) {
  const auto limit = std::chrono::steady_clock::now() + 10s;
  while (process_state(pid) != 0) {
    if (std::chrono::steady_clock::now() > limit) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// The pid of the child that answers a call on `pool` (one worker thread: its one child);
// -1, with a failure recorded, when the call failed.
int child_pid(knit::pool& pool) {
  auto r = run_one(pool, "pid", "");
  EXPECT_TRUE(r.ok()) << knit::failure_message(r);
  return r.ok() ? std::stoi(r.value()) : -1;
}

class process_limits : public testing::Test {
 protected:
  void SetUp() override {
    knit::process_options options;
    options.crash_loop_crashes = 1;  // a kill counted as a crash would show as degraded
    knit_test::use_process_options(options);
    base_ = knit::current_process_stats();
  }
  knit::process_stats delta() const {
    knit::process_stats now = knit::current_process_stats();
    now.killed -= base_.killed;
    now.respawned -= base_.respawned;
    now.crashes -= base_.crashes;
    now.children_started -= base_.children_started;
    return now;
  }
  knit::process_stats base_;
};

TEST_F(process_limits, a_call_past_its_deadline_kills_its_child_and_the_next_call_gets_a_new_one) {
  knit::pool pool(knit_test::threads(1));  // one worker thread: one child
  const int pid = child_pid(pool);
  ASSERT_GT(pid, 0);

  knit::call_options options;
  options.timeout = 200ms;
  const auto late = run_one(pool, "sleep_pid", kHang, options);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error(), knit::errc::timed_out);
  EXPECT_TRUE(gone_within_10s(pid)) << "the child of the timed-out call still runs";

  const int next = child_pid(pool);
  ASSERT_GT(next, 0);
  EXPECT_NE(next, pid);
  const knit::process_stats d = delta();
  EXPECT_EQ(d.killed, 1U);
  EXPECT_EQ(d.respawned, 1U);
  EXPECT_EQ(d.crashes, 0U);
  EXPECT_EQ(d.degraded_workers, 0U);
}

// Whoever comes first, the pool's stuck scan (which retires the worker thread) or the
// channel's own limit (which kills the child and fails the call), the call gets errc::stuck,
// the child is killed, and the next call is served by a new child.
TEST_F(process_limits, a_stuck_call_kills_its_child_whoever_declares_it_first) {
  knit::pool_options o = knit_test::threads(1);
  // The call that starts a worker thread's child counts the spawn and handshake in its stuck
  // limit; a sanitized child (ASan maps its shadow first) on a loaded machine can take
  // longer than 200 ms to start.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  o.stuck_after = 2s;
#else
  o.stuck_after = 200ms;
#endif
  knit::pool pool(o);
  const int pid = child_pid(pool);
  ASSERT_GT(pid, 0);

  const auto stuck = run_one(pool, "sleep_pid", kHang);
  ASSERT_FALSE(stuck.ok());
  EXPECT_EQ(stuck.error(), knit::errc::stuck);
  EXPECT_TRUE(gone_within_10s(pid)) << "the child of the stuck call still runs";

  const int next = child_pid(pool);
  ASSERT_GT(next, 0);
  EXPECT_NE(next, pid);
  const knit::process_stats d = delta();
  EXPECT_EQ(d.killed, 1U);
  EXPECT_EQ(d.respawned, 1U);
  EXPECT_EQ(d.crashes, 0U);
}

// The stuck limit counts from the moment the child has the request; the error names the
// task, the pid and how the child ended.
TEST_F(process_limits, a_stuck_calls_error_names_the_task_the_pid_and_the_kill) {
  knit::pool pool(knit_test::threads(1));
  const int pid = std::stoi(run_one(pool, "pid", "").value());
  knit::call_options options;
  options.stuck_after = 100ms;
  const auto r = run_one(pool, "sleep_pid", kHang, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), knit::errc::stuck);
  const std::string what = knit::failure_message(r);
  EXPECT_NE(what.find("'sleep_pid'"), std::string::npos) << what;
  EXPECT_NE(what.find("pid " + std::to_string(pid)), std::string::npos) << what;
  EXPECT_NE(what.find("stuck"), std::string::npos) << what;
  EXPECT_NE(what.find("signal 9 (SIGKILL)"), std::string::npos) << what;
  EXPECT_EQ(process_state(pid), 0) << "killed and reaped before the call failed";
  EXPECT_NE(std::stoi(run_one(pool, "pid", "").value()), pid);
  EXPECT_EQ(delta().killed, 1U);
  EXPECT_EQ(delta().respawned, 1U);
}

// A call whose deadline has passed when its host would send it is not sent at all.
TEST_F(process_limits, a_call_already_past_its_deadline_is_not_sent) {
  knit::pool pool(knit_test::threads(1));
  knit::call_options options;
  options.timeout = std::chrono::nanoseconds(1);
  const auto r = run_one(pool, "echo", "x", options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), knit::errc::timed_out);
  EXPECT_EQ(knit::current_process_stats().calls, base_.calls) << "no call reached a child";
}

// Kills are not crashes: three in a row with a crash loop of one crash leave the worker
// healthy and its respawns without backoff.
TEST_F(process_limits, kills_do_not_make_a_crash_loop) {
  knit::pool pool(knit_test::threads(1));
  knit::call_options options;
  options.stuck_after = 20ms;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(run_one(pool, "sleep_pid", kHang, options).error(), knit::errc::stuck);
  }
  EXPECT_EQ(run_one(pool, "echo", "fine").value(), "fine");
  const knit::process_stats d = delta();
  EXPECT_EQ(d.killed, 3U);
  EXPECT_EQ(d.crashes, 0U);
  EXPECT_EQ(d.degraded_workers, 0U);
  EXPECT_EQ(d.respawned, 3U);
}

}  // namespace

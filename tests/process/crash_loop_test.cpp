// The crash-loop policy (K crashes within T: degraded, respawns back off, doubling up to a
// cap, ending once the window empties) on synthetic times, and a pool worker in a crash loop
// reporting degraded and waiting before its respawn, which an ended worker owes no one.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/crash_loop.hpp"
#include "process/process_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using knit::detail::crash_loop;

TEST(crash_loop_test, k_crashes_within_t_degrade_and_back_off_doubling_to_the_cap) {
  crash_loop policy(3, 10s, 100ms, 350ms);
  const auto t0 = crash_loop::clock::time_point() + 1h;
  policy.record_crash(t0);
  policy.record_crash(t0 + 1s);
  EXPECT_FALSE(policy.degraded(t0 + 1s));
  EXPECT_EQ(policy.respawn_at(t0 + 1s), t0 + 1s);  // below K: at once
  policy.record_crash(t0 + 2s);
  EXPECT_TRUE(policy.degraded(t0 + 2s));
  EXPECT_EQ(policy.respawn_at(t0 + 2s), t0 + 2s + 100ms);
  policy.record_crash(t0 + 3s);
  EXPECT_EQ(policy.respawn_at(t0 + 3s), t0 + 3s + 200ms);
  policy.record_crash(t0 + 4s);
  EXPECT_EQ(policy.respawn_at(t0 + 4s), t0 + 4s + 350ms);  // 400 ms capped
}

TEST(crash_loop_test, degraded_ends_once_the_window_holds_fewer_than_k) {
  crash_loop policy(2, 10s, 100ms, 1s);
  const auto t0 = crash_loop::clock::time_point() + 1h;
  policy.record_crash(t0);
  policy.record_crash(t0 + 5s);
  EXPECT_TRUE(policy.degraded(t0 + 5s));
  EXPECT_TRUE(policy.degraded(t0 + 9s));
  EXPECT_FALSE(policy.degraded(t0 + 10s));  // the first crash left the window
  EXPECT_EQ(policy.respawn_at(t0 + 10s), t0 + 10s);
}

TEST(crash_loop_test, a_worker_in_a_crash_loop_is_degraded_and_waits_to_respawn) {
  knit::process_options options;
  options.crash_loop_crashes = 3;
  options.crash_loop_window = 60s;
  options.backoff_initial = 200ms;
  options.backoff_max = 200ms;
  knit_test::use_process_options(options);
  knit::pool pool(knit_test::threads(1));
  const auto degraded_before = knit::current_process_stats().degraded_workers;
  std::string last;
  for (int i = 0; i < 3; ++i) {
    auto r = knit_test::run_one(pool, "abort", "");
    ASSERT_EQ(r.error(), knit::errc::worker_crashed);
    last = knit::failure_message(r);
  }
  EXPECT_NE(last.find("crash loop: respawns back off"), std::string::npos) << last;
  EXPECT_EQ(knit::current_process_stats().degraded_workers - degraded_before, 1u);
  // The respawn waits at least backoff_initial after the last crash (a lower bound only).
  const auto start = std::chrono::steady_clock::now();
  auto good = knit_test::run_one(pool, "echo", "after");
  ASSERT_TRUE(good.ok()) << knit::failure_message(good);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
  EXPECT_EQ(knit::current_process_stats().degraded_workers - degraded_before, 1u)
      << "3 crashes are still in the window";
}

// A worker ended (its pool gone) while its respawn backs off replaces nothing: the next
// child started, by another pool, is a first child, not a respawn. The backoff only makes
// deterministic what a crash at a pool's end does by chance (the pool ends before the
// starter gets to the replacement).
TEST(crash_loop_test, a_respawn_the_worker_ended_before_is_owed_to_no_later_start) {
  knit::process_options options;
  options.crash_loop_crashes = 1;
  options.backoff_initial = 60s;  // the replacement would start long after the pool's end
  options.backoff_max = 60s;
  knit_test::use_process_options(options);
  const knit::process_stats before = knit::current_process_stats();
  {
    knit::pool pool(knit_test::threads(1));
    ASSERT_EQ(knit_test::run_one(pool, "abort", "").error(), knit::errc::worker_crashed);
  }
  knit_test::use_process_options(knit::process_options{});
  knit::pool pool(knit_test::threads(1));
  const auto r = knit_test::run_one(pool, "pid", "");
  ASSERT_TRUE(r.ok()) << knit::failure_message(r);
  const knit::process_stats after = knit::current_process_stats();
  EXPECT_EQ(after.children_started - before.children_started, 2u);
  EXPECT_EQ(after.respawned - before.respawned, 0u) << "a new pool's first child counted as "
                                                       "the respawn of a crash in an ended pool";
}

}  // namespace

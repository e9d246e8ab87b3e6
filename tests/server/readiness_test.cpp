// readiness.hpp: the policy's order (draining, refusing work, workers stuck, ready), its
// windows, and its answers.
#include "ops/readiness.hpp"  // first: the header must be self-contained

#include <chrono>

#include <gtest/gtest.h>

namespace knit_server {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

readiness_signals at(clock_type::time_point now) {
  readiness_signals s;
  s.now = now;
  return s;
}

const clock_type::time_point kNow = clock_type::time_point(100s);

TEST(readiness, ReadyWithNothingRecorded) {
  EXPECT_EQ(assess_readiness(at(kNow)), readiness::ready);
  EXPECT_EQ(readiness_status(readiness::ready), 200U);
  EXPECT_EQ(readiness_body(readiness::ready), "ok\n");
}

TEST(readiness, DrainingWinsOverEverything) {
  readiness_signals s = at(kNow);
  s.draining = true;
  s.last_refusal = kNow;
  s.nth_last_stuck = kNow;
  EXPECT_EQ(assess_readiness(s), readiness::draining);
  EXPECT_EQ(readiness_status(readiness::draining), 503U);
  EXPECT_EQ(readiness_body(readiness::draining), "draining\n");
}

TEST(readiness, ARefusalDegradesForTheRefusalWindowOnly) {
  readiness_signals s = at(kNow);
  s.last_refusal = kNow - 999ms;
  EXPECT_EQ(assess_readiness(s), readiness::refusing_work);
  EXPECT_EQ(readiness_body(readiness::refusing_work), "degraded: refusing work\n");
  s.last_refusal = kNow - 1s;
  EXPECT_EQ(assess_readiness(s), readiness::ready);
  // Another thread's clock read may come out just after ours: still recent.
  s.last_refusal = kNow + 1ms;
  EXPECT_EQ(assess_readiness(s), readiness::refusing_work);
  readiness_policy wide;
  wide.refusal_window = 5s;
  s.last_refusal = kNow - 4s;
  EXPECT_EQ(assess_readiness(s, wide), readiness::refusing_work);
}

TEST(readiness, ARunOfStuckCallsDegradesForTheStuckWindow) {
  readiness_signals s = at(kNow);
  s.nth_last_stuck = kNow - 59s;
  EXPECT_EQ(assess_readiness(s), readiness::workers_stuck);
  EXPECT_EQ(readiness_status(readiness::workers_stuck), 503U);
  EXPECT_EQ(readiness_body(readiness::workers_stuck), "degraded: workers stuck\n");
  s.nth_last_stuck = kNow - 60s;
  EXPECT_EQ(assess_readiness(s), readiness::ready);
  readiness_policy off;
  off.stuck_calls = 0;
  s.nth_last_stuck = kNow;
  EXPECT_EQ(assess_readiness(s, off), readiness::ready);
}

TEST(readiness, RefusingIsReportedBeforeStuck) {
  readiness_signals s = at(kNow);
  s.last_refusal = kNow;
  s.nth_last_stuck = kNow;
  EXPECT_EQ(assess_readiness(s), readiness::refusing_work);
}

TEST(readiness, CrashLoopingWorkersDegradeUntilTheyRecover) {
  readiness_signals s = at(kNow);
  s.crash_looping_workers = 1;
  EXPECT_EQ(assess_readiness(s), readiness::workers_crash_looping);
  EXPECT_EQ(readiness_status(readiness::workers_crash_looping), 503U);
  EXPECT_EQ(readiness_body(readiness::workers_crash_looping), "degraded: workers crash-looping\n");
  s.crash_looping_workers = 0;
  EXPECT_EQ(assess_readiness(s), readiness::ready);
  // After the stuck rule in the order: both hold, stuck is reported.
  s.crash_looping_workers = 2;
  s.nth_last_stuck = kNow;
  EXPECT_EQ(assess_readiness(s), readiness::workers_stuck);
}

}  // namespace
}  // namespace knit_server

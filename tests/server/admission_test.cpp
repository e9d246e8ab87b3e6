// admission.hpp: the expected-wait rule and the count backstop, without a pool.
#include "admission.hpp"  // first: the header must be self-contained

#include <gtest/gtest.h>

namespace knit_server {
namespace {

using namespace std::chrono_literals;

TEST(Admission, ExpectedWaitIsCallsAheadPerWorkerTimesCallTime) {
  EXPECT_EQ(expected_wait({0, 1, 10ms}), 0ns);
  EXPECT_EQ(expected_wait({5, 1, 10ms}), 50ms);
  EXPECT_EQ(expected_wait({5, 2, 10ms}), 25ms);
  EXPECT_EQ(expected_wait({100, 4, 0ns}), 0ns);   // no estimate yet
  EXPECT_EQ(expected_wait({3, 0, 10ms}), 30ms);   // zero threads read as one, never a division by 0
}

TEST(Admission, ExpectedWaitSaturatesInsteadOfOverflowing) {
  EXPECT_EQ(expected_wait({1'000'000, 1, std::chrono::nanoseconds::max()}),
            std::chrono::nanoseconds::max());
}

TEST(Admission, AcceptsWhileTheWaitIsWithinTheLimit) {
  const admission_policy policy{250ms, 4096};
  EXPECT_EQ(decide_admission({0, 1, 1s}, policy), admission::accept);       // idle pool
  EXPECT_EQ(decide_admission({25, 1, 10ms}, policy), admission::accept);    // exactly 250 ms
  EXPECT_EQ(decide_admission({50, 2, 10ms}, policy), admission::accept);    // 250 ms over 2 workers
}

TEST(Admission, RefusesAWaitOverTheLimit) {
  const admission_policy policy{250ms, 4096};
  EXPECT_EQ(decide_admission({26, 1, 10ms}, policy), admission::reject_delay);
  EXPECT_EQ(decide_admission({1, 1, 300ms}, policy), admission::reject_delay);
  EXPECT_EQ(decide_admission({1, 2, 300ms}, policy), admission::accept);
}

TEST(Admission, TheCountCapIsABackstopWhenThereIsNoEstimate) {
  const admission_policy policy{250ms, 8};
  EXPECT_EQ(decide_admission({7, 1, 0ns}, policy), admission::accept);
  EXPECT_EQ(decide_admission({8, 1, 0ns}, policy), admission::reject_count);
  EXPECT_EQ(decide_admission({8, 1, 1us}, policy), admission::reject_count);
}

TEST(Admission, ZeroTurnsEachRuleOff) {
  EXPECT_EQ(decide_admission({1000, 1, 1s}, {0ms, 0}), admission::accept);
  EXPECT_EQ(decide_admission({1000, 1, 1s}, {0ms, 2000}), admission::accept);
  EXPECT_EQ(decide_admission({1000, 1, 0ns}, {1ms, 0}), admission::accept);
  EXPECT_EQ(decide_admission({1000, 1, 1ms}, {1ms, 0}), admission::reject_delay);
}

}  // namespace
}  // namespace knit_server

#include "idle_policy.hpp"

#include "knit/options.hpp"

#include <gtest/gtest.h>

namespace {

using knit::detail::idle_policy;

TEST(idle_policy, zero_budget_never_spins) {
  idle_policy p(0, 0);
  EXPECT_FALSE(p.try_begin_spin());
  EXPECT_EQ(p.spinners(), 0u);
}

TEST(idle_policy, uncapped_lets_everyone_spin) {
  idle_policy p(50, 0);
  EXPECT_EQ(p.spin_budget_ns(), 50'000u);
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(p.try_begin_spin());
  EXPECT_EQ(p.spinners(), 8u);
  EXPECT_FALSE(p.hand_off_after_catch()) << "no hand-off without a cap";
}

TEST(idle_policy, single_spinner_cap_and_hand_off) {
  idle_policy p(50, 1);
  ASSERT_TRUE(p.try_begin_spin());
  EXPECT_FALSE(p.try_begin_spin()) << "at most one spinner";
  EXPECT_FALSE(p.hand_off_after_catch()) << "someone is still spinning";
  p.end_spin();
  EXPECT_TRUE(p.hand_off_after_catch()) << "the last spinner caught work: hand the role on";
  EXPECT_TRUE(p.try_begin_spin());
}

TEST(pool_options, default_policy_spin) {
  knit::pool_options o;
  EXPECT_EQ(o.effective_spin_us(), 50u);
  o.threads = 2;
  EXPECT_EQ(o.effective_spin_us(), 0u);
  o.spin_us = 100;
  EXPECT_EQ(o.effective_spin_us(), 100u);
}

}  // namespace

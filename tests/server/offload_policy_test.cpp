// offload_policy: auto mode's per-route choice, driven with made-up costs (no clock, no pool).
#include "placement/offload_policy.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "settings/server_settings.hpp"  // offload_options_from_env

namespace knit_server {
namespace {

constexpr std::uint32_t kThresholdUs = 6;
constexpr std::uint64_t kUs = 1000;  // ns

// Runs `calls` calls through the policy as auto_placement does: ask, then report the cost of
// the measured ones. Returns how many calls it took until the route was on `want_pooled`
// (0 if it already was), or nullopt if it never got there.
std::optional<int> drive(offload_policy& p, std::uint64_t cost_ns, int calls,
                         std::optional<bool> want_pooled = std::nullopt) {
  std::optional<int> reached;
  if (want_pooled && p.pooled() == *want_pooled) reached = 0;
  for (int i = 1; i <= calls; ++i) {
    const offload_policy::decision d = p.next();
    if (d.measure) p.record(cost_ns);
    if (!reached && want_pooled && p.pooled() == *want_pooled) reached = i;
  }
  return reached;
}

TEST(offload_policy, starts_on_the_pool_and_measures_the_first_call) {
  offload_policy p(kThresholdUs);
  EXPECT_TRUE(p.pooled());
  EXPECT_FALSE(p.has_average());
  const offload_policy::decision d = p.next();
  EXPECT_TRUE(d.pooled);
  EXPECT_TRUE(d.measure);
  EXPECT_EQ(p.pooled_calls(), 1u);
  EXPECT_EQ(p.inline_calls(), 0u);
}

TEST(offload_policy, thresholds_are_t_and_three_fifths_of_t) {
  offload_policy p(10);
  EXPECT_EQ(p.enter_pool_ns(), 10'000u);
  EXPECT_EQ(p.leave_pool_ns(), 6'000u);
}

TEST(offload_policy, a_cheap_route_converges_to_inline) {
  offload_policy p(kThresholdUs);
  // 1 µs is below 3/5 T: the first sample brings the route inline.
  EXPECT_EQ(drive(p, 1 * kUs, 1000, false), 1);
  EXPECT_FALSE(p.pooled());
  EXPECT_EQ(p.switches(), 1u);
  EXPECT_EQ(p.pooled_calls(), 1u);
  EXPECT_EQ(p.inline_calls(), 999u);
  EXPECT_EQ(p.average_ns(), 1 * kUs);
}

TEST(offload_policy, an_expensive_route_stays_on_the_pool) {
  offload_policy p(kThresholdUs);
  drive(p, 50 * kUs, 1000);
  EXPECT_TRUE(p.pooled());
  EXPECT_EQ(p.switches(), 0u);
  EXPECT_EQ(p.inline_calls(), 0u);
  EXPECT_EQ(p.pooled_calls(), 1000u);
}

TEST(offload_policy, inline_calls_are_sampled_one_in_sixteen) {
  offload_policy p(kThresholdUs);
  drive(p, 1 * kUs, 1);  // now inline; the first inline call is measured
  ASSERT_FALSE(p.pooled());
  int measured = 0;
  for (int i = 0; i < 16 * 10; ++i) measured += p.next().measure ? 1 : 0;
  EXPECT_EQ(measured, 10);
}

TEST(offload_policy, pooled_calls_are_sampled_one_in_four) {
  offload_policy p(kThresholdUs);
  int measured = 0;
  for (int i = 0; i < 4 * 10; ++i) measured += p.next().measure ? 1 : 0;
  EXPECT_EQ(measured, 10);
}

TEST(offload_policy, hysteresis_stops_flapping_around_the_threshold) {
  // Measured costs straddling T (5 and 7 µs alternately, so the average sits near 6 µs and
  // crosses T both ways): once on the pool the route stays there, because coming back needs
  // the average under 3.6 µs.
  offload_policy p(kThresholdUs);
  drive(p, 1 * kUs, 16);  // inline first
  ASSERT_FALSE(p.pooled());
  for (int i = 0; i < 20'000; ++i) {
    const offload_policy::decision d = p.next();
    if (d.measure) p.record((i / 16) % 2 == 0 ? 5 * kUs : 7 * kUs);
  }
  EXPECT_LE(p.switches(), 2u) << "inline -> pool at most once after the start";
  // A route costing just under T, steadily, stays inline: only above T does it move.
  offload_policy q(kThresholdUs);
  drive(q, 1 * kUs, 1);
  drive(q, 5900, 20'000);
  EXPECT_FALSE(q.pooled());
  EXPECT_EQ(q.switches(), 1u);
}

TEST(offload_policy, a_cheap_route_that_becomes_expensive_moves_within_two_samples) {
  offload_policy p(kThresholdUs);
  drive(p, 1 * kUs, 1000);
  ASSERT_FALSE(p.pooled());
  // 2,000 µs counts as 4 T = 24 µs: 1 + 23/8 = 3.9 µs after one sample, 7.3 µs after two.
  const std::optional<int> calls = drive(p, 2000 * kUs, 100, true);
  ASSERT_TRUE(calls);
  EXPECT_LE(*calls, 2 * static_cast<int>(offload_policy::kInlineSamplePeriod));
}

TEST(offload_policy, one_slow_sample_does_not_move_a_cheap_route) {
  // A 3 µs route with one 76 µs sample (seen on a loaded machine): capped at 24 µs it
  // lifts the average to 5.6 µs, still under T. (Uncapped: 12.1 µs, on the pool.)
  offload_policy p(kThresholdUs);
  drive(p, 3 * kUs, 1000);
  ASSERT_FALSE(p.pooled());
  const std::uint64_t switches = p.switches();
  while (!p.next().measure) {
  }
  p.record(76 * kUs);
  EXPECT_FALSE(p.pooled());
  drive(p, 3 * kUs, 1000);
  EXPECT_FALSE(p.pooled());
  EXPECT_EQ(p.switches(), switches);
}

TEST(offload_policy, a_modest_cost_rise_moves_within_the_bounded_number_of_samples) {
  // 1 µs -> 10 µs: the average passes 6 µs after n samples with (7/8)^n < 4/9, n = 7.
  offload_policy p(kThresholdUs);
  drive(p, 1 * kUs, 1000);
  ASSERT_FALSE(p.pooled());
  const std::optional<int> calls = drive(p, 10 * kUs, 1000, true);
  ASSERT_TRUE(calls);
  EXPECT_LE(*calls, 7 * static_cast<int>(offload_policy::kInlineSamplePeriod));
  EXPECT_GT(*calls, static_cast<int>(offload_policy::kInlineSamplePeriod))
      << "one 10 µs sample alone must not move a 1 µs route (weight 1/8)";
}

TEST(offload_policy, an_expensive_route_that_becomes_cheap_comes_back_inline) {
  // 2,000 µs (counted as 24 µs) -> 1 µs: the average falls under 3.6 µs after n samples
  // with 1 + 23 (7/8)^n < 3.6, n = 17 (integer steps round towards the old average: allow
  // 19), one in four pooled calls sampled.
  offload_policy p(kThresholdUs);
  drive(p, 2000 * kUs, 100);
  ASSERT_TRUE(p.pooled());
  EXPECT_EQ(p.average_ns(), 24 * kUs);
  const std::optional<int> calls = drive(p, 1 * kUs, 1000, false);
  ASSERT_TRUE(calls);
  EXPECT_LE(*calls, 19 * static_cast<int>(offload_policy::kPooledSamplePeriod));
}

TEST(offload_policy, a_switch_measures_the_first_call_on_the_new_path) {
  offload_policy p(kThresholdUs);
  p.next();
  p.record(1 * kUs);  // now inline
  EXPECT_TRUE(p.next().measure);
}

// KNIT_AUTO_INLINE_US through the env_lookup seam.
env_lookup fake_env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(offload_options, defaults_when_unset_or_empty) {
  EXPECT_EQ(offload_options_from_env(fake_env({})).inline_below_us,
            offload_options::kDefaultInlineUs);
  EXPECT_EQ(offload_options_from_env(fake_env({{"KNIT_AUTO_INLINE_US", ""}})).inline_below_us,
            offload_options::kDefaultInlineUs);
}

TEST(offload_options, reads_a_value_in_range) {
  EXPECT_EQ(offload_options_from_env(fake_env({{"KNIT_AUTO_INLINE_US", "25"}})).inline_below_us,
            25u);
  EXPECT_EQ(
      offload_options_from_env(fake_env({{"KNIT_AUTO_INLINE_US", "1000000"}})).inline_below_us,
      1'000'000u);
}

TEST(offload_options, rejects_bad_values_naming_the_variable) {
  for (const char* bad :
       {"0", "-1", "+5", "5us", " 5", "0x10", "1000001", "99999999999999999999"}) {
    try {
      offload_options_from_env(fake_env({{"KNIT_AUTO_INLINE_US", bad}}));
      ADD_FAILURE() << "accepted " << bad;
    } catch (const server_config_error& e) {
      EXPECT_EQ(std::string(e.what()), std::string("KNIT_AUTO_INLINE_US=\"") + bad +
                                           "\": expected an integer from 1 to 1000000");
    }
  }
}

}  // namespace
}  // namespace knit_server

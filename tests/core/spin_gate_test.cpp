// The spin gate: the CPU rule (spin_gate.hpp) and the miss backoff (spin_backoff.hpp) as
// pure functions, the KNIT_SPIN_GATE option, and a pool whose host and worker share one
// CPU, which must never spin (and one given two CPUs, which does).
#include <gtest/gtest.h>

#include <sched.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "knit/pool.hpp"
#include "spin_backoff.hpp"
#include "spin_gate.hpp"
#include "support/gate.hpp"
#include "support/pin_thread.hpp"
#include "support/pool_helpers.hpp"

namespace {

using knit::detail::spin_backoff;
using knit::detail::spin_has_own_cpu;
using knit::detail::usable_cpu_count;
using knit_test::drain_until;
using knit_test::eventually;
using knit_test::my_cpus;
using knit_test::pin_host;

// ---- the CPU rule ----

TEST(spin_gate, a_spinner_needs_a_cpu_besides_the_host_and_every_worker) {
  EXPECT_FALSE(spin_has_own_cpu(1, 1)) << "host and worker on one CPU";
  EXPECT_TRUE(spin_has_own_cpu(2, 1));
  EXPECT_FALSE(spin_has_own_cpu(2, 2)) << "three threads, two CPUs";
  EXPECT_TRUE(spin_has_own_cpu(3, 2));
  EXPECT_TRUE(spin_has_own_cpu(64, 1));
  EXPECT_FALSE(spin_has_own_cpu(0, 1)) << "an empty count never spins";
}

TEST(spin_gate, usable_cpus_are_the_host_mask_plus_pinned_workers) {
  const std::vector<int> one{0}, two{0, 1};
  EXPECT_EQ(usable_cpu_count(one, {}, 1), 1u) << "unpinned workers inherit the host's mask";
  EXPECT_EQ(usable_cpu_count(two, {}, 4), 2u);
  EXPECT_EQ(usable_cpu_count(one, std::vector<int>{0}, 1), 1u) << "worker pinned to the host's CPU";
  EXPECT_EQ(usable_cpu_count(one, std::vector<int>{1}, 1), 2u) << "worker pinned elsewhere";
  EXPECT_EQ(usable_cpu_count(one, std::vector<int>{1, 2, 3}, 2), 3u)
      << "only the first `threads` entries pin anyone";
  EXPECT_EQ(usable_cpu_count(one, std::vector<int>{1, 1, 1}, 3), 2u) << "duplicates count once";
}

// ---- the miss backoff ----

// Spins taken over `periods` idle periods in which every spin misses.
int spins_over_missed_periods(spin_backoff& b, int periods) {
  int spins = 0;
  for (int i = 0; i < periods; ++i) {
    if (b.should_spin()) {
      ++spins;
      b.missed();
    }
  }
  return spins;
}

TEST(spin_backoff, the_first_miss_is_free_then_skips_double_up_to_the_cap) {
  spin_backoff b;
  EXPECT_TRUE(b.should_spin());
  b.missed();
  EXPECT_EQ(b.periods_to_skip(), 0u) << "one miss in a row does not back off";
  std::vector<std::uint32_t> skips;
  for (int miss = 2; miss <= 10; ++miss) {
    ASSERT_TRUE(b.should_spin());
    b.missed();
    skips.push_back(b.periods_to_skip());
    std::uint32_t skipped = 0;  // each should_spin() == false consumes one skipped period
    while (!b.should_spin()) ++skipped;
    EXPECT_EQ(skipped, skips.back()) << "after miss " << miss;
  }
  const std::vector<std::uint32_t> expected{1, 2, 4, 8, 16, 32, 64, 64, 64};
  EXPECT_EQ(skips, expected);
}

TEST(spin_backoff, a_catch_resets_everything) {
  spin_backoff b;
  for (int i = 0; i < 6; ++i) {
    while (!b.should_spin()) {
    }
    b.missed();
  }
  ASSERT_GT(b.periods_to_skip(), 0u);
  b.caught();  // e.g. a skipped period whose doorbell rang within the budget
  EXPECT_EQ(b.periods_to_skip(), 0u);
  EXPECT_EQ(b.misses_in_a_row(), 0u);
  EXPECT_TRUE(b.should_spin());
  b.missed();
  EXPECT_EQ(b.periods_to_skip(), 0u) << "the next miss is again the first of a run";
}

TEST(spin_backoff, a_back_to_back_stream_never_skips) {
  spin_backoff b;
  for (int i = 0; i < 10'000; ++i) {
    ASSERT_TRUE(b.should_spin()) << "period " << i;
    if (i % 2 == 0) b.missed();
    else b.caught();  // every other spin catches: never two misses in a row
  }
}

TEST(spin_backoff, an_idle_trickle_spins_about_once_per_cap_periods) {
  spin_backoff b;
  const int periods = 65 * 100;
  const int spins = spins_over_missed_periods(b, periods);
  // Spins: 8 to reach the cap (after 1+1+2+...+32 = 64 skips), then one per 65 periods.
  EXPECT_LE(spins, periods / static_cast<int>(spin_backoff::kMaxSkip + 1) + 8);
  EXPECT_GE(spins, periods / static_cast<int>(spin_backoff::kMaxSkip + 1));
}

// ---- the option ----

TEST(spin_gate_option, on_for_the_default_budget_off_for_an_explicit_one) {
  knit::pool_options o;
  EXPECT_TRUE(o.effective_spin_gate());
  o.spin_us = 50;
  EXPECT_FALSE(o.effective_spin_gate()) << "KNIT_SPIN=N keeps meaning: spin N us";
  o.spin_gate = true;
  EXPECT_TRUE(o.effective_spin_gate());
  o.spin_us.reset();
  o.spin_gate = false;
  EXPECT_FALSE(o.effective_spin_gate());
  EXPECT_NE(o.describe().find("spin_gate=off"), std::string::npos) << o.describe();
  EXPECT_NE(knit::pool_options{}.describe().find("spin_gate=auto(default)"), std::string::npos);
}

TEST(spin_gate_option, knit_spin_gate_reads_auto_and_off) {
  ::setenv("KNIT_SPIN_GATE", "off", 1);
  EXPECT_EQ(knit::pool_options::from_env().spin_gate, std::optional<bool>(false));
  ::setenv("KNIT_SPIN_GATE", "auto", 1);
  EXPECT_EQ(knit::pool_options::from_env().spin_gate, std::optional<bool>(true));
  ::setenv("KNIT_SPIN_GATE", "", 1);
  EXPECT_FALSE(knit::pool_options::from_env().spin_gate.has_value());
  ::setenv("KNIT_SPIN_GATE", "yes", 1);
  try {
    (void)knit::pool_options::from_env();
    ADD_FAILURE() << "KNIT_SPIN_GATE=yes accepted";
  } catch (const knit::config_error& e) {
    EXPECT_NE(std::string(e.what()).find("KNIT_SPIN_GATE='yes'"), std::string::npos) << e.what();
  }
  ::unsetenv("KNIT_SPIN_GATE");
}

// ---- a pool ----

// Runs `calls` calls one after another, each delivered before the next is sent, then
// waits (bounded) until the worker has gone idle after the last one (`idle` holds).
template <class Idle>
void run_calls_then_wait_idle(knit::pool& p, int calls, Idle idle) {
  for (int i = 0; i < calls; ++i) {
    bool done = false;
    ASSERT_FALSE(p.submit([](int x) { return x + 1; }, i,
                          [&done](knit::result<int> r) {
                            EXPECT_TRUE(r.ok());
                            done = true;
                          }));
    ASSERT_TRUE(drain_until(p, [&] { return done; }));
  }
  ASSERT_TRUE(eventually([&] { return idle(p.stats().totals()); }));
}

TEST(pool_spin_gate, host_and_worker_on_one_cpu_never_spin) {
  const std::vector<int> cpus = my_cpus();
  ASSERT_FALSE(cpus.empty());
  const int cpu = cpus.back();
  pin_host pin(cpu);
  ASSERT_TRUE(pin.ok());
  knit::pool_options o;  // the default policy: 50 us at one worker, gate on
  o.worker_cpus = {cpu};
  knit::pool p(o);
  run_calls_then_wait_idle(
      p, 200, [](const knit::worker_stats& t) { return t.spins_skipped_shared_cpu > 0; });
  const knit::worker_stats t = p.stats().totals();
  EXPECT_EQ(t.spins, 0u);
  EXPECT_EQ(t.spin_hits, 0u);
  EXPECT_GT(t.spins_skipped_shared_cpu, 0u);
  EXPECT_EQ(t.spins_skipped_after_misses, 0u) << "the backoff never runs when the CPU gate is shut";
  EXPECT_NE(knit::to_json(p.stats()).find("\"spins_skipped_shared_cpu\":"), std::string::npos);
}

TEST(pool_spin_gate, unpinned_worker_inherits_the_single_cpu_host_mask) {
  const std::vector<int> cpus = my_cpus();
  ASSERT_FALSE(cpus.empty());
  pin_host pin(cpus.front());
  ASSERT_TRUE(pin.ok());
  knit::pool p(knit::pool_options{});
  run_calls_then_wait_idle(
      p, 50, [](const knit::worker_stats& t) { return t.spins_skipped_shared_cpu > 0; });
  EXPECT_EQ(p.stats().totals().spins, 0u);
}

TEST(pool_spin_gate, an_explicit_spin_budget_still_spins_on_a_shared_cpu) {
  const std::vector<int> cpus = my_cpus();
  ASSERT_FALSE(cpus.empty());
  pin_host pin(cpus.front());
  ASSERT_TRUE(pin.ok());
  knit::pool_options o;
  o.spin_us = 50;  // explicit: the gate is off unless asked for
  knit::pool p(o);
  run_calls_then_wait_idle(p, 50, [](const knit::worker_stats& t) { return t.spins > 0; });
  EXPECT_EQ(p.stats().totals().spins_skipped_shared_cpu, 0u);

  o.spin_gate = true;  // asked for: gated like the default
  knit::pool gated(o);
  run_calls_then_wait_idle(
      gated, 50, [](const knit::worker_stats& t) { return t.spins_skipped_shared_cpu > 0; });
  EXPECT_EQ(gated.stats().totals().spins, 0u);
}

// Host and worker on two different CPUs: the gate is open, a trickle of spaced calls backs
// the spinner off, and a back-to-back stream brings it back.
TEST(pool_spin_gate, two_cpus_spin_back_off_on_a_trickle_and_resume_on_a_stream) {
  const std::vector<int> cpus = my_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs in this thread's affinity mask";
  pin_host pin(cpus[0]);
  ASSERT_TRUE(pin.ok());
  knit::pool_options o;
  o.worker_cpus = {cpus[1]};
  knit::pool p(o);
  ASSERT_TRUE(eventually([&] { return p.stats().totals().spins > 0; }))
      << "an idle worker spins once first";
  EXPECT_EQ(p.stats().totals().spins_skipped_shared_cpu, 0u);

  // A trickle: each call sent 2 ms after the last one came back, far past the 50 us budget,
  // so the spins after it miss (bounded: a preempted spinner may still catch one now and then).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  int sent = 0;
  while (p.stats().totals().spins_skipped_after_misses == 0 && sent < 5'000 &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    bool done = false;
    ASSERT_FALSE(
        p.submit([](int x) { return x; }, sent++, [&done](knit::result<int>) { done = true; }));
    ASSERT_TRUE(drain_until(p, [&] { return done; }));
  }
  EXPECT_GT(p.stats().totals().spins_skipped_after_misses, 0u)
      << "after " << sent << " spaced calls";

  // Back to back: the host busy-polls and sends the next call as soon as one comes back;
  // a skipped period then sees work before parking (or a doorbell within the budget),
  // which resets the backoff, and the spinner catches calls again.
  const std::uint64_t hits_before = p.stats().totals().spin_hits;
  int stream = 0;
  while (p.stats().totals().spin_hits == hits_before && stream < 200'000 &&
         std::chrono::steady_clock::now() < give_up + std::chrono::seconds(20)) {
    for (int i = 0; i < 100; ++i, ++stream) {
      bool done = false;
      ASSERT_FALSE(
          p.submit([](int x) { return x; }, stream, [&done](knit::result<int>) { done = true; }));
      while (!done) p.poll();
    }
  }
  EXPECT_GT(p.stats().totals().spin_hits, hits_before)
      << "after " << stream << " back-to-back calls";
}

}  // namespace

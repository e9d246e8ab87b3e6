// Pool stress: exactly-once delivery over random configurations (threads 1-16, spin 0/50,
// park 0/1 ms, doorbell on/off, steal on/off, single spinner), and shutdown under load in
// both modes. >= 1,000,000 calls at KNIT_STRESS_SCALE=1 in a normal build (fewer under
// sanitizers, where each call is ~20x slower). Results are checked one by one.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "knit/pool.hpp"
#include "support/counting_value.hpp"
#include "support/gate.hpp"  // eventually()
#include "support/pool_helpers.hpp"

namespace {

constexpr std::uint64_t scaled(std::uint64_t n) {
  return n * KNIT_STRESS_SCALE / (KNIT_SANITIZED ? 20 : 1);
}

knit::pool_options random_options(std::mt19937& rng) {
  knit::pool_options o;
  o.threads = std::uniform_int_distribution<unsigned>(1, 16)(rng);
  o.spin_us = (rng() & 1) ? 50u : 0u;
  o.park_ms = (rng() & 1) ? 1u : 0u;
  o.doorbell = o.park_ms == 0 ? true : (rng() & 1);
  o.steal = rng() & 1;
  o.max_spinners = (rng() % 3 == 0) ? 1u : 0u;
  o.queue_capacity = (rng() & 1) ? 4 : 256;  // small rings exercise the backlog
  return o;
}

TEST(pool_stress, exactly_once_over_random_configurations) {
  const std::uint64_t total = scaled(1'000'000);
  const int configs = 24;
  const std::uint64_t per_config = total / configs + 1;
  std::mt19937 rng(12345);
  std::uint64_t grand_total = 0;
  for (int k = 0; k < configs; ++k) {
    const knit::pool_options o = random_options(rng);
    SCOPED_TRACE(o.describe());
    const auto started = std::chrono::steady_clock::now();
    knit::pool p(o);
    std::vector<std::uint8_t> seen(per_config, 0);
    std::uint64_t wrong = 0, errors = 0, delivered = 0;
    std::uint64_t next = 0;
    // Keep up to 512 calls in flight, so wake-ups amortise and the rings stay busy.
    while (delivered < per_config) {
      while (next < per_config && next - delivered < 512) {
        const std::uint64_t i = next++;
        ASSERT_FALSE(p.submit([](std::uint64_t x) { return x * 2654435761u; }, i,
                              [&, i](knit::result<std::uint64_t> r) {
                                ++delivered;
                                if (!r.ok()) {
                                  ++errors;
                                  return;
                                }
                                if (r.value() != i * 2654435761u) ++wrong;
                                ++seen[i];
                              }));
      }
      // Refill when the window is half empty; once everything is submitted, wait for the rest.
      knit_test::drain_until(p, [&] {
        return delivered == per_config || (next < per_config && next - delivered < 256);
      });
    }
    p.shutdown();
    std::fprintf(stderr, "  config %d/%d: %s: %.2f s\n", k + 1, configs, o.describe().c_str(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    EXPECT_EQ(wrong, 0u);
    EXPECT_EQ(errors, 0u);
    for (std::uint64_t i = 0; i < per_config; ++i) ASSERT_EQ(seen[i], 1) << "call " << i;
    const auto s = p.stats();
    EXPECT_EQ(s.totals().calls_run, per_config) << "each call ran exactly once";
    if (!o.steal) {
      EXPECT_EQ(s.totals().calls_stolen, 0u);
    }
    grand_total += per_config;
  }
  RecordProperty("calls", std::to_string(grand_total));
  EXPECT_GE(grand_total, total);
}

class shutdown_under_load : public ::testing::TestWithParam<knit::shutdown_mode> {};

TEST_P(shutdown_under_load, loses_nothing) {
  std::mt19937 rng(777);
  for (int round = 0; round < 6; ++round) {
    knit::pool_options o = random_options(rng);
    SCOPED_TRACE(o.describe());
    knit::pool p(o);
    const std::uint64_t n = scaled(20'000);
    std::vector<std::uint8_t> seen(n, 0);
    std::uint64_t values = 0, cancelled = 0, other = 0;
    const long live_before = knit_test::counting_value::live.load();
    for (std::uint64_t i = 0; i < n; ++i) {
      ASSERT_FALSE(p.submit(
          [](knit_test::counting_value v) {
            std::uint64_t h = v.value;
            for (int s = 0; s < 50; ++s) h = h * 6364136223846793005u + 1;
            return h == 42 ? h : v.value;  // a little real work whose result is used
          },
          knit_test::counting_value(i),
          [&, i](knit::result<std::uint64_t> r) {
            ++seen[i];
            if (r.ok()) ++values;
            else if (r.error() == knit::errc::cancelled) ++cancelled;
            else ++other;
          }));
      if (i == n / 2) p.drain();  // some results already delivered, the rest in flight
    }
    p.shutdown(GetParam());
    for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << "call " << i;
    EXPECT_EQ(other, 0u);
    EXPECT_EQ(values + cancelled, n);
    if (GetParam() == knit::shutdown_mode::drain) {
      EXPECT_EQ(cancelled, 0u);
    }
    const auto s = p.stats();
    EXPECT_EQ(s.totals().calls_run, values) << "every value came from exactly one run";
    EXPECT_EQ(knit_test::counting_value::live.load(), live_before)
        << "every call record was destroyed once";
  }
}

INSTANTIATE_TEST_SUITE_P(modes, shutdown_under_load,
                         ::testing::Values(knit::shutdown_mode::drain,
                                           knit::shutdown_mode::cancel));

// Worker retirement racing everything else: stuck_after of 2 ms with one call in 200
// sleeping 30 ms (and any call the scheduler delays), over random configurations, so
// workers are retired and replaced while others steal from their rings and the host moves
// their queued calls. Every call is delivered exactly once, with its value or errc::stuck;
// every record is destroyed once, by the host or by its detached thread.
TEST(pool_stress, retirement_under_load_loses_nothing) {
  std::mt19937 rng(4242);
  for (int round = 0; round < 4; ++round) {
    knit::pool_options o = random_options(rng);
    o.stuck_after = std::chrono::milliseconds(2);
    SCOPED_TRACE(o.describe());
    const long live_before = knit_test::counting_value::live.load();
    const std::uint64_t n = scaled(20'000);
    std::vector<std::uint8_t> seen(n, 0);
    std::uint64_t values = 0, stuck = 0, other = 0, delivered = 0, next = 0;
    knit::pool_stats s;
    {
      knit::pool p(o);
      while (delivered < n) {
        while (next < n && next - delivered < 256) {
          const std::uint64_t i = next++;
          ASSERT_FALSE(p.submit(
              [](knit_test::counting_value v) {
                if (v.value % 200 == 7) std::this_thread::sleep_for(std::chrono::milliseconds(30));
                return v.value;
              },
              knit_test::counting_value(i),
              [&, i](knit::result<std::uint64_t> r) {
                ++seen[i];
                ++delivered;
                if (r.ok() && r.value() == i) ++values;
                else if (r.error() == knit::errc::stuck) ++stuck;
                else ++other;
              }));
        }
        ASSERT_TRUE(knit_test::drain_until(
            p, [&] { return delivered == n || (next < n && next - delivered < 128); }));
      }
      p.shutdown();
      s = p.stats();
    }
    std::fprintf(stderr,
                 "  %s: %llu stuck, %llu workers replaced, %llu still running at shutdown\n",
                 o.describe().c_str(), static_cast<unsigned long long>(s.calls_stuck),
                 static_cast<unsigned long long>(s.workers_replaced),
                 static_cast<unsigned long long>(s.retired_running));
    for (std::uint64_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << "call " << i;
    EXPECT_EQ(other, 0u);
    EXPECT_EQ(values + stuck, n);
    EXPECT_GT(stuck, 0u);
    EXPECT_EQ(s.calls_stuck, stuck);
    EXPECT_EQ(s.workers_replaced, stuck) << "each retirement seated a fresh worker";
    EXPECT_EQ(s.totals().calls_run, n)
        << "stuck calls ran too (counters carry over to the replacement)";
    ASSERT_TRUE(knit_test::eventually([&] {
      return knit_test::counting_value::live.load() == live_before;
    })) << "every record destroyed once";
  }
}

}  // namespace

// Stuck calls: a task that does not return within stuck_after fails its call (errc::stuck,
// or errc::timed_out past its deadline), its worker is retired and replaced, the calls
// queued behind it move on, shutdown does not wait for it, and its record is freed exactly
// once when (if) the task returns (pool.cpp, "Retiring a worker").
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "knit/asio.hpp"
#include "knit/pool.hpp"
#include "support/counting_value.hpp"
#include "support/gate.hpp"
#include "support/pool_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using knit_test::counting_value;
using knit_test::drain_until;
using knit_test::eventually;
using knit_test::gate;

struct shape {
  unsigned threads;
  bool steal;
};

class stuck : public ::testing::TestWithParam<shape> {
 protected:
  knit::pool_options options() const {
    knit::pool_options o;
    o.threads = GetParam().threads;
    o.steal = GetParam().steal;
    o.stuck_after = 100ms;
    return o;
  }
};

// The scenario: a task blocked on a gate the test opens only at the end.
TEST_P(stuck, the_call_fails_a_replacement_serves_the_rest_and_shutdown_does_not_wait) {
  const long baseline = counting_value::live.load();
  auto g = std::make_shared<gate>();
  {
    knit::pool p(options());
    std::optional<knit::result<std::uint64_t>> stuck_result;
    int stuck_handler_calls = 0;
    auto handler_token = std::make_shared<int>(0);  // what a handler captures belongs to the host
    ASSERT_FALSE(p.submit(
        [g](counting_value v) {
          g->wait();
          return v.value;
        },
        counting_value(7),
        [&, handler_token](knit::result<std::uint64_t> r) {
          ++stuck_handler_calls;
          stuck_result = std::move(r);
        }));
    ASSERT_TRUE(eventually([&] { return g->waiting.load() == 1; }));

    // Queued while the stuck call runs: with one worker, or stealing off, these sit in the
    // stuck worker's own ring until it is retired.
    constexpr int kBehind = 20, kAfter = 1000;
    std::vector<int> seen(kBehind + kAfter, 0);
    int ok = 0;
    auto submit_one = [&](int i) {
      return p.submit([](counting_value v) { return v.value; },
                      counting_value(static_cast<std::uint64_t>(i)),
                      [&, i](knit::result<std::uint64_t> r) {
                        ++seen[static_cast<std::size_t>(i)];
                        if (r.ok() && r.value() == static_cast<std::uint64_t>(i)) ++ok;
                      });
    };
    for (int i = 0; i < kBehind; ++i) ASSERT_FALSE(submit_one(i));

    ASSERT_TRUE(drain_until(p, [&] { return stuck_result.has_value(); }));
    EXPECT_EQ(stuck_result->error(), knit::errc::stuck);
    EXPECT_EQ(handler_token.use_count(), 1)
        << "the host destroyed the handler right after delivering";
    ASSERT_TRUE(drain_until(p, [&] { return ok == kBehind; }))
        << "calls queued behind the stuck one moved on";
    for (int i = kBehind; i < kBehind + kAfter; ++i) ASSERT_FALSE(submit_one(i));
    ASSERT_TRUE(drain_until(p, [&] { return ok == kBehind + kAfter; }));
    for (int n : seen) EXPECT_EQ(n, 1);

    const auto s = p.stats();
    EXPECT_EQ(s.calls_stuck, 1u);
    EXPECT_EQ(s.workers_replaced, 1u);
    EXPECT_EQ(s.retired_running, 1u);
    EXPECT_EQ(s.threads, options().threads);
    EXPECT_NE(knit::to_json(s).find("\"workers_replaced\":1"), std::string::npos);

    const auto report =
        p.shutdown(knit::shutdown_mode::drain, std::chrono::steady_clock::now() + 5s);
    EXPECT_EQ(g->returned.load(), 0) << "shutdown returned while the task is still blocked";
    EXPECT_FALSE(report.deadline_passed) << "nothing else was pending";
    EXPECT_EQ(report.threads_detached, 1u);
    EXPECT_EQ(stuck_handler_calls, 1);
  }
  // The pool is gone; the detached thread still holds the record. Open the gate: the task
  // returns, and the thread frees the record (its argument and task) exactly once
  // (counting_value aborts on a double destroy).
  g->open = true;
  ASSERT_TRUE(
      eventually([&] { return counting_value::live.load() == baseline && g.use_count() == 1; }));
}

// The task returns while the pool still runs: the host frees the record at its next drain.
TEST_P(stuck, a_stuck_task_that_returns_is_freed_by_the_host_without_a_second_delivery) {
  const long baseline = counting_value::live.load();
  auto g = std::make_shared<gate>();
  knit::pool p(options());
  int calls = 0;
  ASSERT_FALSE(p.submit(
      [g](counting_value v) {
        g->wait();
        return v.value;
      },
      counting_value(1),
      [&](knit::result<std::uint64_t> r) {
        ++calls;
        EXPECT_EQ(r.error(), knit::errc::stuck);
      }));
  ASSERT_TRUE(drain_until(p, [&] { return calls == 1; }));
  EXPECT_EQ(p.stats().retired_running, 1u);
  g->open = true;
  ASSERT_TRUE(drain_until(p, [&] { return p.stats().retired_running == 0; }));
  EXPECT_EQ(counting_value::live.load(), baseline);
  EXPECT_EQ(g.use_count(), 1) << "the task (holding the gate) was destroyed";
  EXPECT_EQ(calls, 1);
  const auto report = p.shutdown(knit::shutdown_mode::drain, std::chrono::steady_clock::now() + 5s);
  EXPECT_EQ(report.threads_detached, 0u);
}

INSTANTIATE_TEST_SUITE_P(shapes, stuck,
                         ::testing::Values(shape{2, true}, shape{2, false}, shape{1, true}),
                         [](const auto& info) {
                           return std::to_string(info.param.threads) + "_workers_steal_" +
                                  (info.param.steal ? "on" : "off");
                         });

TEST(stuck_call, a_deadline_that_passed_first_makes_it_timed_out_and_it_is_delivered_once) {
  auto g = std::make_shared<gate>();
  knit::pool_options o;  // stuck detection off pool-wide; on for this call
  knit::pool p(o);
  std::vector<std::error_code> got;
  knit::call_options co;
  co.timeout = 30ms;
  co.stuck_after = 150ms;
  ASSERT_FALSE(p.submit(
      [g](int) {
        g->wait();
        return 0;
      },
      0, [&](knit::result<int> r) { got.push_back(r.error()); }, co));
  ASSERT_TRUE(drain_until(p, [&] { return p.stats().calls_stuck == 1; }));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], knit::errc::timed_out);
  // The replacement works.
  int value = 0;
  ASSERT_FALSE(
      p.submit([](int x) { return x + 1; }, 41, [&](knit::result<int> r) { value = r.value(); }));
  ASSERT_TRUE(drain_until(p, [&] { return value == 42; }));
  g->open = true;
  ASSERT_TRUE(drain_until(p, [&] { return p.stats().retired_running == 0; }));
  EXPECT_EQ(got.size(), 1u);
}

TEST(stuck_call, stuck_without_a_deadline_is_its_own_error) {
  auto g = std::make_shared<gate>();
  knit::pool p;
  std::optional<knit::result<int>> got;
  knit::call_options co;
  co.stuck_after = 50ms;
  ASSERT_FALSE(p.submit(
      [g](int) {
        g->wait();
        return 0;
      },
      0, [&](knit::result<int> r) { got = std::move(r); }, co));
  ASSERT_TRUE(drain_until(p, [&] { return got.has_value(); }));
  EXPECT_EQ(got->error(), knit::errc::stuck);
  EXPECT_NE(got->error().message().find("stuck_after"), std::string::npos);
  g->open = true;
  ASSERT_TRUE(drain_until(p, [&] { return p.stats().retired_running == 0; }));
}

// next_deadline() includes the moment a running call would become stuck, so a host that
// only arms a timer on it still notices.
TEST(stuck_call, next_deadline_covers_the_moment_a_running_call_becomes_stuck) {
  auto g = std::make_shared<gate>();
  knit::pool_options o;
  o.stuck_after = 10s;
  knit::pool p(o);
  EXPECT_FALSE(p.next_deadline()) << "nothing out";
  const auto before = std::chrono::steady_clock::now();
  int calls = 0;
  ASSERT_FALSE(p.submit(
      [g](int) {
        g->wait();
        return 0;
      },
      0, [&](knit::result<int>) { ++calls; }));
  ASSERT_TRUE(eventually([&] { return g->waiting.load() == 1; }));
  const auto after = std::chrono::steady_clock::now();
  const auto nd = p.next_deadline();
  ASSERT_TRUE(nd.has_value());
  EXPECT_GE(*nd, before + 10s);
  EXPECT_LE(*nd, after + 10s);
  g->open = true;
  ASSERT_TRUE(drain_until(p, [&] { return calls == 1; }));
  EXPECT_FALSE(p.next_deadline()) << "nothing out any more";
}

// Through asio_host: the timer it arms on next_deadline() is what drains the stuck call;
// nothing else would wake the io_context (no result ever arrives).
TEST(stuck_call, asio_host_wakes_for_a_stuck_call) {
  auto g = std::make_shared<gate>();
  boost::asio::io_context io;
  knit::pool_options o;
  o.stuck_after = 50ms;
  knit::pool p(o);
  std::optional<std::error_code> got;
  {
    knit::asio_host host(io, p);
    ASSERT_FALSE(host.submit(
        [g](int) {
          g->wait();
          return 0;
        },
        0,
        [&](knit::result<int> r) {
          got = r.error();
          io.stop();
        }));
    io.run_for(30s);
  }
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, knit::errc::stuck);
  g->open = true;
  ASSERT_TRUE(drain_until(p, [&] { return p.stats().retired_running == 0; }));
}

}  // namespace

// shutdown(mode, deadline): calls not started by the deadline are cancelled, running ones
// are waited for until it and then abandoned (their threads detached, their records freed
// by those threads if the task returns); every call is delivered exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "knit/pool.hpp"
#include "knit/pool_host.hpp"
#include "support/counting_value.hpp"
#include "support/gate.hpp"
#include "support/pool_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using knit_test::counting_value;
using knit_test::eventually;
using knit_test::gate;

// More work queued than the deadline allows: each call is delivered once, with its value
// or errc::cancelled, and the report's counts match the handlers'.
TEST(shutdown_deadline, under_load_every_call_is_delivered_or_cancelled_once) {
  for (const bool steal : {true, false}) {
    const long baseline = counting_value::live.load();
    knit::pool_options o;
    o.threads = 2;
    o.steal = steal;
    o.queue_capacity = 16;        // most calls wait in the backlog
    constexpr int kCalls = 2000;  // 1 ms each on 2 workers: about a second of work
    std::vector<int> seen(kCalls, 0);
    int ok = 0, cancelled = 0, other = 0;
    knit::shutdown_report report;
    {
      knit::pool p(o);
      for (int i = 0; i < kCalls; ++i) {
        ASSERT_FALSE(p.submit(
            [](counting_value v) {
              std::this_thread::sleep_for(1ms);
              return v.value;
            },
            counting_value(static_cast<std::uint64_t>(i)),
            [&, i](knit::result<std::uint64_t> r) {
              ++seen[static_cast<std::size_t>(i)];
              if (r.ok() && r.value() == static_cast<std::uint64_t>(i)) {
                ++ok;
              } else if (r.error() == knit::errc::cancelled) {
                ++cancelled;
              } else {
                ++other;
              }
            }));
      }
      report = p.shutdown(knit::shutdown_mode::drain, std::chrono::steady_clock::now() + 50ms);
      EXPECT_EQ(p.pending(), 0u);
      EXPECT_FALSE(p.accepting());
    }
    for (int n : seen) ASSERT_EQ(n, 1);
    EXPECT_EQ(other, 0);
    EXPECT_EQ(ok + cancelled, kCalls);
    EXPECT_TRUE(report.deadline_passed);
    EXPECT_GT(report.cancelled_at_deadline, 0u);
    EXPECT_EQ(static_cast<std::size_t>(cancelled),
              report.cancelled_at_deadline + report.abandoned_running);
    EXPECT_LE(report.threads_detached, report.abandoned_running);
    // Calls given up while running finish their 1 ms sleep and their threads free them.
    ASSERT_TRUE(eventually([&] { return counting_value::live.load() == baseline; }));
  }
}

// One worker blocked forever (stuck detection off): shutdown returns at its deadline,
// cancels what is queued, abandons the running call and detaches its thread.
TEST(shutdown_deadline, a_task_that_never_returns_does_not_hold_shutdown) {
  for (const unsigned threads : {1u, 2u}) {
    const long baseline = counting_value::live.load();
    auto g = std::make_shared<gate>();
    knit::pool_options o;
    o.threads = threads;
    o.steal = false;
    std::optional<std::error_code> blocked_result;
    int queued_cancelled = 0;
    knit::shutdown_report report;
    {
      knit::pool p(o);
      // One blocker per worker, each submitted once the previous one runs: a worker that
      // has started a call is never queued behind, so each lands on an idle worker.
      for (unsigned t = 0; t < threads; ++t) {
        ASSERT_FALSE(p.submit(
            [g](counting_value v) {
              g->wait();
              return v.value;
            },
            counting_value(1), [&](knit::result<std::uint64_t> r) { blocked_result = r.error(); }));
        ASSERT_TRUE(eventually([&] { return g->waiting.load() == static_cast<int>(t + 1); }));
      }
      for (int i = 0; i < 100; ++i) {
        ASSERT_FALSE(p.submit([](counting_value v) { return v.value; }, counting_value(2),
                              [&](knit::result<std::uint64_t> r) {
                                if (r.error() == knit::errc::cancelled) ++queued_cancelled;
                              }));
      }
      report = p.shutdown(knit::shutdown_mode::drain, std::chrono::steady_clock::now() + 100ms);
      EXPECT_EQ(g->returned.load(), 0) << "shutdown returned while the tasks are still blocked";
      EXPECT_EQ(p.pending(), 0u);
      EXPECT_EQ(p.stats().retired_running, threads);
    }
    EXPECT_TRUE(report.deadline_passed);
    EXPECT_EQ(report.abandoned_running, threads);
    EXPECT_EQ(report.threads_detached, threads);
    EXPECT_EQ(report.cancelled_at_deadline, 100u);
    EXPECT_EQ(queued_cancelled, 100);
    ASSERT_TRUE(blocked_result.has_value());
    EXPECT_EQ(*blocked_result, knit::errc::cancelled);
    EXPECT_NE(report.describe().find("detached"), std::string::npos);
    g->open = true;
    ASSERT_TRUE(
        eventually([&] { return counting_value::live.load() == baseline && g.use_count() == 1; }));
  }
}

// The destructor bounds itself with options.stop_timeout (a hang here is the failure).
TEST(shutdown_deadline, the_destructor_uses_stop_timeout) {
  const long baseline = counting_value::live.load();
  auto g = std::make_shared<gate>();
  std::optional<std::error_code> got;
  {
    knit::pool_options o;
    o.stop_timeout = 50ms;
    knit::pool p(o);
    ASSERT_FALSE(p.submit(
        [g](counting_value v) {
          g->wait();
          return v.value;
        },
        counting_value(1), [&](knit::result<std::uint64_t> r) { got = r.error(); }));
    ASSERT_TRUE(eventually([&] { return g->waiting.load() == 1; }));
  }
  EXPECT_EQ(g->returned.load(), 0);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, knit::errc::cancelled);
  g->open = true;
  ASSERT_TRUE(
      eventually([&] { return counting_value::live.load() == baseline && g.use_count() == 1; }));
}

// Everything finishes in time: nothing is reported, results are all delivered.
TEST(shutdown_deadline, a_generous_deadline_changes_nothing) {
  knit::pool_options o;
  o.threads = 2;
  knit::pool p(o);
  int ok = 0;
  for (int i = 0; i < 100; ++i) {
    ASSERT_FALSE(p.submit([](int x) { return x; }, i, [&](knit::result<int> r) { ok += r.ok(); }));
  }
  const auto report =
      p.shutdown(knit::shutdown_mode::drain, std::chrono::steady_clock::now() + 60s);
  EXPECT_EQ(ok, 100);
  EXPECT_FALSE(report.deadline_passed);
  EXPECT_EQ(report.cancelled_at_deadline + report.abandoned_running + report.threads_detached, 0u);
  EXPECT_EQ(p.stats().calls_stuck, 0u);
  const auto again = p.shutdown(knit::shutdown_mode::drain, std::chrono::steady_clock::now());
  EXPECT_FALSE(again.deadline_passed) << "idempotent";
}

// An attached host leaving with a call that never returns (stuck detection off) while the
// builder shuts down with a deadline, by shutdown(mode, deadline) or by the destructor's
// stop_timeout: the leave waits for the call until the pool's deadline, then gives it up on
// its own thread (errc::cancelled delivered there, its worker retired and detached); so
// the host leaves, the shutdown returns, and its report counts that call. The host's
// queued call is cancelled by the leave itself, before the deadline: not in the report.
TEST(shutdown_deadline, an_attached_hosts_call_that_never_returns_is_given_up_at_the_deadline) {
  for (const bool by_destructor : {false, true}) {
    const long baseline = counting_value::live.load();
    auto g = std::make_shared<gate>();
    knit::pool_options o;
    o.threads = 1;
    o.stop_timeout = 100ms;
    auto p = std::make_unique<knit::pool>(o);
    std::atomic<bool> running{false};
    std::optional<std::error_code> blocked_result, queued_result;
    std::thread::id blocked_delivered_on;
    std::thread host([&] {
      knit::pool_host h(*p);
      ASSERT_FALSE(h.submit(
          [g](counting_value v) {
            g->wait();
            return v.value;
          },
          counting_value(1),
          [&](knit::result<std::uint64_t> r) {
            blocked_result = r.error();
            blocked_delivered_on = std::this_thread::get_id();
          }));
      ASSERT_FALSE(h.submit([](counting_value v) { return v.value; }, counting_value(2),
                            [&](knit::result<std::uint64_t> r) { queued_result = r.error(); }));
      ASSERT_TRUE(eventually([&] { return g->waiting.load() == 1; }));
      running = true;
      // The event loop runs until the pool stops accepting; then the host leaves.
      while (h.accepting()) {
        h.drain();
        std::this_thread::sleep_for(1ms);
      }
    });
    ASSERT_TRUE(eventually([&] { return running.load(); }));
    knit::shutdown_report report;
    if (by_destructor) {
      p.reset();  // stop_timeout: 100 ms; it prints what it gave up
    } else {
      report = p->shutdown(knit::shutdown_mode::drain, std::chrono::steady_clock::now() + 100ms);
      EXPECT_EQ(g->returned.load(), 0) << "shutdown returned while the task is still blocked";
      EXPECT_EQ(p->stats().retired_running, 1u);
    }
    const std::thread::id host_id = host.get_id();
    host.join();
    if (!by_destructor) {
      EXPECT_TRUE(report.deadline_passed);
      EXPECT_EQ(report.abandoned_running, 1u);
      EXPECT_EQ(report.threads_detached, 1u);
      EXPECT_EQ(report.cancelled_at_deadline, 0u);
      p.reset();
    }
    ASSERT_TRUE(blocked_result.has_value());
    EXPECT_EQ(*blocked_result, knit::errc::cancelled);
    EXPECT_EQ(blocked_delivered_on, host_id) << "delivered on a thread other than its host's";
    ASSERT_TRUE(queued_result.has_value());
    EXPECT_EQ(*queued_result, knit::errc::cancelled);
    g->open = true;  // the detached worker returns and frees its record
    ASSERT_TRUE(
        eventually([&] { return counting_value::live.load() == baseline && g.use_count() == 1; }));
  }
}

}  // namespace

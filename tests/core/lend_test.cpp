// Lending a worker (src/lent_workers.cpp): with every worker held by a long call, calls
// queued behind it run on a temporary extra worker while the held call runs on and still
// delivers its own result; at the lending limit the queued calls wait for their deadlines;
// a lent worker ends once idle, and a shutdown with one running frees every record once.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "knit/asio_host.hpp"
#include "knit/pool.hpp"
#include "knit/pool_host.hpp"
#include "support/counting_value.hpp"
#include "support/gate.hpp"
#include "support/host_thread.hpp"
#include "support/pool_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using knit_test::counting_value;
using knit_test::drain_until;
using knit_test::eventually;
using knit_test::gate;

knit::pool_options one_worker(unsigned lent) {
  knit::pool_options o;
  o.threads = 1;
  o.lend_after = 20ms;
  o.max_lent_workers = lent;
  return o;
}

// Submits a call blocked on `g` that returns `value` into `out`.
void submit_held(knit::pool& p, const std::shared_ptr<gate>& g, std::uint64_t value,
                 std::optional<knit::result<std::uint64_t>>& out, knit::call_options options = {}) {
  ASSERT_FALSE(p.submit(
      [g](counting_value v) {
        g->wait();
        return v.value;
      },
      counting_value(value), [&out](knit::result<std::uint64_t> r) { out = std::move(r); },
      options));
}

TEST(lend, calls_behind_a_held_call_run_on_a_lent_worker_and_the_held_call_delivers) {
  auto g = std::make_shared<gate>();
  knit::pool p(one_worker(1));
  std::optional<knit::result<std::uint64_t>> held;
  submit_held(p, g, 7, held);
  ASSERT_TRUE(eventually([&] { return g->waiting.load() == 1; }));

  constexpr int kBehind = 10;
  int ok = 0;
  for (int i = 0; i < kBehind; ++i) {
    ASSERT_FALSE(p.submit([](counting_value v) { return v.value; },
                          counting_value(static_cast<std::uint64_t>(i)),
                          [&ok, i](knit::result<std::uint64_t> r) {
                            if (r.ok() && r.value() == static_cast<std::uint64_t>(i)) ++ok;
                          }));
  }
  ASSERT_TRUE(drain_until(p, [&] { return ok == kBehind; }))
      << "the calls behind the held one ran while it is held";
  EXPECT_FALSE(held.has_value()) << "the held call is still running";
  EXPECT_EQ(g->returned.load(), 0);
  auto s = p.stats();
  // One, unless a lent worker was itself preempted for lend_after in a quick call (a loaded
  // machine, TSan): held by wall time, it made the host lend another.
  EXPECT_GE(s.lent_workers_started, 1u);
  EXPECT_EQ(s.calls_stuck, 0u);
  EXPECT_EQ(s.workers_replaced, 0u);

  g->open = true;
  ASSERT_TRUE(drain_until(p, [&] { return held.has_value(); }));
  ASSERT_TRUE(held->ok());
  EXPECT_EQ(held->value(), 7u) << "the held call's own result was delivered";

  // Idle, the lent worker ends (no timer, no spin: it found nothing and left).
  ASSERT_TRUE(eventually([&] {
    const auto t = p.stats();
    return t.lent_workers_now == 0 && t.lent_workers_retired == t.lent_workers_started;
  }));
  const auto retired = p.stats().lent_workers_retired;
  EXPECT_NE(knit::to_json(p.stats()).find("\"lent_workers_retired\":" + std::to_string(retired)),
            std::string::npos);
}

// pool_stats counts the calls run on lent workers (pool_stats::lent, and in totals()): with
// the only seat held, every call behind the held one ran on a lent worker.
TEST(lend, totals_count_the_calls_run_on_lent_workers) {
  auto g = std::make_shared<gate>();
  knit::pool p(one_worker(1));
  std::optional<knit::result<std::uint64_t>> held;
  submit_held(p, g, 1, held);
  ASSERT_TRUE(eventually([&] { return g->waiting.load() == 1; }));
  constexpr std::uint64_t kBehind = 10;
  std::uint64_t ok = 0;
  for (std::uint64_t i = 0; i < kBehind; ++i) {
    ASSERT_FALSE(p.submit([](int x) { return x; }, 0,
                          [&ok](knit::result<int> r) {
                            if (r.ok()) ++ok;
                          }));
  }
  ASSERT_TRUE(drain_until(p, [&] { return ok == kBehind; }));
  const auto s = p.stats();
  EXPECT_EQ(s.calls_submitted, kBehind + 1);
  EXPECT_EQ(s.workers[0].calls_run, 1u) << "the seat ran the held call only";
  EXPECT_EQ(s.lent.calls_run, kBehind);
  EXPECT_EQ(s.lent.calls_stolen, kBehind) << "a lent worker takes every call from a seat's ring";
  EXPECT_EQ(s.totals().calls_run, s.calls_submitted) << "every call that ran, lent or not";
  EXPECT_NE(knit::to_json(s).find("\"lent\":{\"calls_run\":" + std::to_string(kBehind)),
            std::string::npos);
  g->open = true;
  ASSERT_TRUE(drain_until(p, [&] { return held.has_value(); }));
  // Idle, the lent worker ends; its counts stay.
  ASSERT_TRUE(eventually([&] { return p.stats().lent_workers_now == 0; }));
  EXPECT_EQ(p.stats().totals().calls_run, kBehind + 1);
}

// A lent worker retired for a stuck call: a fresh slot takes its place, and the lent counts
// go on from the retired one's (they only grow).
TEST(lend, lent_counts_stay_when_a_lent_worker_is_retired_for_a_stuck_call) {
  auto g1 = std::make_shared<gate>(), g2 = std::make_shared<gate>();
  knit::pool p(one_worker(1));
  std::optional<knit::result<std::uint64_t>> a, b;
  submit_held(p, g1, 1, a);
  ASSERT_TRUE(eventually([&] { return g1->waiting.load() == 1; }));
  knit::call_options stuck;
  stuck.stuck_after = 100ms;
  submit_held(p, g2, 2, b, stuck);  // on the lent worker, which it holds past stuck_after
  ASSERT_TRUE(drain_until(p, [&] { return b.has_value(); }));
  EXPECT_EQ(b->error(), knit::errc::stuck);
  const auto s = p.stats();
  EXPECT_EQ(s.calls_stuck, 1u);
  EXPECT_EQ(s.lent_workers_retired, 1u) << "the lent worker was retired";
  EXPECT_EQ(s.lent.calls_run, 1u) << "its run still counts after its slot was replaced";
  EXPECT_EQ(s.totals().calls_run, 2u);
  g1->open = true;
  g2->open = true;
  ASSERT_TRUE(drain_until(p, [&] { return a.has_value(); }));
  EXPECT_EQ(a->value(), 1u);
}

// Another host's calls behind the builder's held call: that host sees only its own calls'
// records, and the seats' start times, and lends a worker on its own thread.
TEST(lend, an_attached_hosts_calls_behind_another_hosts_held_call_run_on_a_lent_worker) {
  auto g = std::make_shared<gate>();
  knit::pool p(one_worker(2));
  std::optional<knit::result<std::uint64_t>> held;
  submit_held(p, g, 5, held);
  ASSERT_TRUE(eventually([&] { return g->waiting.load() == 1; }));
  int ok = 0;
  knit_test::host_thread t(p, [&](knit::pool_host& h) {
    for (int i = 0; i < 10; ++i) {
      ASSERT_FALSE(h.submit([](int x) { return x; }, i,
                            [&ok, i](knit::result<int> r) {
                              if (r.ok() && r.value() == i) ++ok;
                            }));
    }
    EXPECT_TRUE(knit_test::drain_host_until(h, [&] { return ok == 10; }));
  });
  t.join();
  EXPECT_EQ(ok, 10);
  EXPECT_FALSE(held.has_value());
  EXPECT_GE(p.stats().lent_workers_started, 1u);
  g->open = true;
  ASSERT_TRUE(drain_until(p, [&] { return held.has_value(); }));
  EXPECT_EQ(held->value(), 5u);
}

// A loop asleep on its timer (asio_host arms it from next_deadline): the call queued right
// behind a long one, before the worker has even started that one, still gets its worker.
// The loop has no other wake-up: no stuck_after, no deadline, and the held call never ends
// before the quick one is answered.
TEST(lend, a_loop_on_its_timer_lends_for_a_call_queued_before_the_long_one_started) {
  for (int round = 0; round < 20; ++round) {
    boost::asio::io_context io;
    auto g = std::make_shared<gate>();
    knit::pool p(one_worker(1));
    knit::asio_host host(io, p);
    std::optional<knit::result<std::uint64_t>> held;
    bool quick = false;
    ASSERT_FALSE(host.submit(
        [g](counting_value v) {
          g->wait();
          return v.value;
        },
        counting_value(1), [&](knit::result<std::uint64_t> r) { held = std::move(r); }));
    ASSERT_FALSE(host.submit([](int x) { return x; }, 2,
                             [&](knit::result<int> r) { quick = r.ok() && r.value() == 2; }));
    // The rescue (30 s) only keeps a broken build from hanging: a lend comes after 20 ms.
    const auto rescue = std::chrono::steady_clock::now() + 30s;
    while (!quick && std::chrono::steady_clock::now() < rescue) io.run_one_for(100ms);
    ASSERT_TRUE(quick) << "round " << round;
    EXPECT_FALSE(held.has_value());
    g->open = true;
    while (!held && std::chrono::steady_clock::now() < rescue) io.run_one_for(100ms);
    ASSERT_TRUE(held.has_value());
    EXPECT_EQ(held->value(), 1u);
  }
}

// asio_host leaves its timer armed at idle under lending (the next call then re-arms
// nothing), but only when it fires within lend_after. A call that runs past lend_after
// alone has the timer re-armed, once its worker holds it and none waits, for its stuck
// limit, 30 s away; when it ends the loop must still be released, and run() return. Without
// the lend_after bound run_for's 10 s pass with that wait left (stopped() false).
TEST(lend, an_idle_loop_is_released_within_lend_after_under_a_far_stuck_limit) {
  boost::asio::io_context io;
  knit::pool_options o = one_worker(1);
  o.stuck_after = 30s;
  knit::pool p(o);
  knit::asio_host host(io, p);
  bool answered = false;
  ASSERT_FALSE(host.submit(
      [](int x) {
        std::this_thread::sleep_for(200ms);  // past lend_after (20 ms): timed by its stuck limit
        return x;
      },
      7, [&answered](knit::result<int> r) { answered = r.ok() && r.value() == 7; }));
  io.run_for(10s);
  EXPECT_TRUE(answered);
  EXPECT_TRUE(io.stopped()) << "the loop was held past its last call";
}

TEST(lend, at_the_limit_the_waiting_calls_meet_their_deadline) {
  auto g1 = std::make_shared<gate>(), g2 = std::make_shared<gate>();
  knit::pool p(one_worker(1));
  std::optional<knit::result<std::uint64_t>> a, b, c;
  submit_held(p, g1, 1, a);
  ASSERT_TRUE(eventually([&] { return g1->waiting.load() == 1; }));
  submit_held(p, g2, 2, b);  // the lent worker takes it, and is held too
  ASSERT_TRUE(drain_until(p, [&] { return g2->waiting.load() == 1; }));
  knit::call_options start_by;
  start_by.timeout = 100ms;
  ASSERT_FALSE(p.submit([](counting_value v) { return v.value; }, counting_value(3),
                        [&c](knit::result<std::uint64_t> r) { c = std::move(r); }, start_by));
  ASSERT_TRUE(drain_until(p, [&] { return c.has_value(); }));
  EXPECT_EQ(c->error(), knit::errc::timed_out) << "no second lent worker: the limit is 1";
  const auto s = p.stats();
  EXPECT_EQ(s.lent_workers_started, 1u);
  EXPECT_EQ(s.lent_workers_now, 1u);
  EXPECT_FALSE(a.has_value());
  EXPECT_FALSE(b.has_value());
  g1->open = true;
  g2->open = true;
  ASSERT_TRUE(drain_until(p, [&] { return a.has_value() && b.has_value(); }));
  EXPECT_EQ(a->value(), 1u);
  EXPECT_EQ(b->value(), 2u);
}

TEST(lend, lending_off_leaves_the_calls_behind_the_held_one) {
  auto g = std::make_shared<gate>();
  knit::pool p(one_worker(0));
  std::optional<knit::result<std::uint64_t>> held, behind;
  submit_held(p, g, 1, held);
  ASSERT_TRUE(eventually([&] { return g->waiting.load() == 1; }));
  knit::call_options start_by;
  start_by.timeout = 100ms;
  ASSERT_FALSE(p.submit([](counting_value v) { return v.value; }, counting_value(2),
                        [&behind](knit::result<std::uint64_t> r) { behind = std::move(r); },
                        start_by));
  ASSERT_TRUE(drain_until(p, [&] { return behind.has_value(); }));
  EXPECT_EQ(behind->error(), knit::errc::timed_out);
  EXPECT_EQ(p.stats().lent_workers_started, 0u);
  g->open = true;
  ASSERT_TRUE(drain_until(p, [&] { return held.has_value(); }));
}

// A lent worker still running at the shutdown's deadline is given up like a seat's worker:
// its call fails, its thread is detached and frees its record once the task returns.
TEST(lend, shutdown_with_a_lent_worker_running_frees_every_record_once) {
  const long baseline = counting_value::live.load();
  auto g1 = std::make_shared<gate>(), g2 = std::make_shared<gate>();
  std::optional<knit::result<std::uint64_t>> a, b;
  {
    knit::pool p(one_worker(1));
    submit_held(p, g1, 1, a);
    ASSERT_TRUE(eventually([&] { return g1->waiting.load() == 1; }));
    submit_held(p, g2, 2, b);
    ASSERT_TRUE(drain_until(p, [&] { return g2->waiting.load() == 1; }));
    EXPECT_EQ(p.stats().lent_workers_now, 1u);
    const auto report =
        p.shutdown(knit::shutdown_mode::drain, std::chrono::steady_clock::now() + 50ms);
    EXPECT_EQ(report.threads_detached, 2u) << "the seat's worker and the lent one";
    ASSERT_TRUE(a.has_value() && b.has_value());
    EXPECT_EQ(a->error(), knit::errc::cancelled);
    EXPECT_EQ(b->error(), knit::errc::cancelled);
  }
  g1->open = true;
  g2->open = true;
  ASSERT_TRUE(eventually([&] {
    return counting_value::live.load() == baseline && g1.use_count() == 1 && g2.use_count() == 1;
  }));
}

}  // namespace

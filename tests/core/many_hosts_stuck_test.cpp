// Stuck calls on attached hosts (src/host_state.hpp, "Stuck calls"; worker_seats.cpp,
// "Retiring a worker"): the call fails on its own host's thread, that host retires and
// replaces its worker, and one regression test per interleaving of the hand-over between
// the declaring host, the host that later frees the retired slot (whichever drains, or the
// shutdown) and the stuck task (named after it; docs/many-hosts.md lists them).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <system_error>
#include <thread>

#include "knit/pool.hpp"
#include "knit/pool_host.hpp"
#include "support/gate.hpp"
#include "support/host_thread.hpp"
#include "support/pool_helpers.hpp"

namespace {

using namespace std::chrono_literals;

knit::pool_options two_workers() {
  knit::pool_options o;
  o.threads = 2;
  o.stuck_after = std::chrono::milliseconds(0);  // off unless a test turns it on
  return o;
}

// The gate the tests' blocked tasks wait on. At namespace scope: a retired thread must never
// outlive what it reads (its task may return after the test that started it).
knit_test::gate g;

// Closes `g` and zeroes its counts, at the start of each test.
void close_gate() {
  g.open = false;
  g.waiting = 0;
  g.returned = 0;
}

knit::call_options stuck_after(std::chrono::milliseconds limit) {
  knit::call_options c;
  c.stuck_after = limit;
  return c;
}

TEST(many_hosts_stuck,
     an_attached_hosts_stuck_call_fails_on_its_thread_and_its_worker_is_replaced) {
  knit::pool p(two_workers());
  close_gate();
  std::atomic<bool> declared{false}, release{false};
  std::thread::id handler_thread;
  std::error_code ec;
  knit::host_stats seen;
  knit_test::host_thread t(p, [&](knit::pool_host& h) {
    ASSERT_FALSE(h.submit(
        [](int x) {
          g.wait();
          return x;
        },
        1,
        [&](knit::result<int> r) {
          handler_thread = std::this_thread::get_id();
          ec = r.error();
        },
        stuck_after(30ms)));
    ASSERT_TRUE(knit_test::drain_host_until(h, [&] { return bool(ec); }));
    EXPECT_EQ(handler_thread, std::this_thread::get_id());
    EXPECT_EQ(h.pending(), 0u);
    seen = h.stats();
    declared = true;
    // Later calls from this host run, on the surviving worker or the replacement.
    int done = 0;
    for (int i = 0; i < 20; ++i) {
      EXPECT_FALSE(h.submit([](int x) { return x; }, i,
                            [&](knit::result<int> r) {
                              EXPECT_TRUE(r.ok());
                              ++done;
                            }));
    }
    EXPECT_TRUE(knit_test::drain_host_until(h, [&] { return done == 20; }));
    while (!release) std::this_thread::sleep_for(1ms);
  });
  // The declaring host put a fresh worker in the seat; the retired slot keeps the record
  // while the task runs.
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return p.stats().retired_running == 1; }));
  ASSERT_TRUE(knit_test::eventually([&] { return declared.load(); }));
  EXPECT_EQ(p.stats().workers_replaced, 1u);
  EXPECT_EQ(ec, knit::errc::stuck);
  EXPECT_EQ(seen.calls_stuck, 1u);
  const knit::pool_stats s = p.stats();
  EXPECT_EQ(s.calls_stuck, 1u);
  EXPECT_EQ(s.retired_running, 1u);
  ASSERT_EQ(s.hosts.size(), 2u);  // the builder attached at its first drain_until
  for (const knit::host_stats& one : s.hosts) {
    EXPECT_EQ(one.calls_stuck, one.index == seen.index ? 1u : 0u) << one.index;
  }
  release = true;
  t.join();
  g.open = true;
  ASSERT_TRUE(knit_test::eventually([&] { return g.returned == 1; }));
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return p.stats().retired_running == 0; }));
  p.shutdown();
}

// The pool-wide stuck_after covers attached hosts' calls too, and a stuck call whose
// deadline has passed keeps its timed_out: the handler runs once.
TEST(many_hosts_stuck, the_pools_stuck_after_covers_attached_hosts_and_a_past_deadline_wins) {
  knit::pool_options o = two_workers();
  o.stuck_after = 40ms;
  knit::pool p(o);
  close_gate();
  std::error_code plain, with_deadline;
  int handled = 0;
  knit_test::host_thread t(p, [&](knit::pool_host& h) {
    auto blocked = [](int x) {
      g.wait();
      return x;
    };
    ASSERT_FALSE(h.submit(blocked, 1, [&](knit::result<int> r) {
      plain = r.error();
      ++handled;
    }));
    ASSERT_TRUE(knit_test::drain_host_until(h, [&] { return bool(plain); }));
    EXPECT_EQ(h.stats().calls_stuck, 1u);
    // Its deadline passes first (while it runs, or before a worker claims it).
    knit::call_options short_deadline;
    short_deadline.timeout = 10ms;
    ASSERT_FALSE(h.submit(
        blocked, 2,
        [&](knit::result<int> r) {
          with_deadline = r.error();
          ++handled;
        },
        short_deadline));
    ASSERT_TRUE(knit_test::drain_host_until(h, [&] { return bool(with_deadline); }));
  });
  t.join();  // leaving waits for the second call to come back or be declared stuck
  EXPECT_EQ(plain, knit::errc::stuck);
  EXPECT_EQ(with_deadline, knit::errc::timed_out);
  EXPECT_EQ(handled, 2);
  const unsigned started = static_cast<unsigned>(g.waiting.load());
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return p.stats().workers_replaced == started; }));
  int done = 0;
  EXPECT_FALSE(p.submit([](int x) { return x; }, 3, [&](knit::result<int>) { ++done; }));
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return done == 1; }));
  g.open = true;
  ASSERT_TRUE(knit_test::eventually([&] { return g.returned.load() == g.waiting.load(); }));
  p.shutdown();
}

// Interleaving: the stuck task returns before any host has collected the retired slot. The
// worker sets handoff (and seats_need_care) first; the next host to drain, here host 0,
// collects the slot and frees the record at once.
TEST(many_hosts_stuck, stuck_task_returns_before_a_host_collects_its_slot) {
  knit::pool p(two_workers());
  close_gate();
  std::error_code ec;
  knit_test::host_thread t(p, [&](knit::pool_host& h) {
    ASSERT_FALSE(h.submit(
        [](int x) {
          g.wait();
          return x;
        },
        1, [&](knit::result<int> r) { ec = r.error(); }, stuck_after(20ms)));
    ASSERT_TRUE(knit_test::drain_host_until(h, [&] { return bool(ec); }));
  });
  t.join();
  EXPECT_EQ(ec, knit::errc::stuck);
  EXPECT_EQ(p.stats().workers_replaced, 1u);  // by the declaring host, before any drain here
  g.open = true;
  ASSERT_TRUE(knit_test::eventually([&] { return g.returned == 1; }));
  ASSERT_TRUE(knit_test::drain_until(p, [&] {
    const knit::pool_stats s = p.stats();
    return s.workers_replaced == 1 && s.retired_running == 0;
  }));
  int done = 0;
  for (int i = 0; i < 10; ++i) {
    EXPECT_FALSE(p.submit([](int x) { return x; }, i, [&](knit::result<int>) { ++done; }));
  }
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return done == 10; }));
  p.shutdown();
}

// Interleaving: the stuck task still runs when the pool shuts down (the retired slot waits
// in the pool's retired list, host 0 never drained). Shutdown leaves the task to its
// thread (detached, it frees the record) instead of joining it forever.
TEST(many_hosts_stuck, shutdown_detaches_a_retired_worker_still_in_its_task) {
  auto p = std::make_unique<knit::pool>(two_workers());
  close_gate();
  std::error_code ec;
  knit_test::host_thread t(*p, [&](knit::pool_host& h) {
    ASSERT_FALSE(h.submit(
        [](int x) {
          g.wait();
          return x;
        },
        1, [&](knit::result<int> r) { ec = r.error(); }, stuck_after(20ms)));
    ASSERT_TRUE(knit_test::drain_host_until(h, [&] { return bool(ec); }));
  });
  t.join();
  EXPECT_EQ(ec, knit::errc::stuck);
  const knit::shutdown_report r =
      p->shutdown(knit::shutdown_mode::drain, std::chrono::steady_clock::now() + 5s);
  EXPECT_EQ(r.threads_detached, 1u);
  EXPECT_FALSE(r.deadline_passed);
  p.reset();
  g.open = true;  // the detached thread frees the record itself (ASan: no leak)
  ASSERT_TRUE(knit_test::eventually([&] { return g.returned == 1; }));
}

// Interleaving: the attached host leaves while its stuck call still runs, then its index
// is taken again by another thread; the old worker never touches the new host's calls.
TEST(many_hosts_stuck, a_host_leaves_while_its_stuck_call_runs_and_its_index_is_reused) {
  knit::pool p(two_workers());
  close_gate();
  unsigned first_index = 0;
  {
    knit_test::host_thread t(p, [&](knit::pool_host& h) {
      first_index = h.index();
      std::error_code ec;
      ASSERT_FALSE(h.submit(
          [](int x) {
            g.wait();
            return x;
          },
          1, [&](knit::result<int> r) { ec = r.error(); }, stuck_after(20ms)));
      ASSERT_TRUE(knit_test::drain_host_until(h, [&] { return bool(ec); }));
    });
  }
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return p.stats().workers_replaced == 1; }));
  knit_test::host_thread again(p, [&](knit::pool_host& h) {
    EXPECT_EQ(h.index(), first_index);
    int done = 0;
    for (int i = 0; i < 50; ++i) {
      EXPECT_FALSE(h.submit([](int x) { return x * 2; }, i,
                            [&](knit::result<int> r) {
                              EXPECT_TRUE(r.ok());
                              ++done;
                            }));
    }
    EXPECT_TRUE(knit_test::drain_host_until(h, [&] { return done == 50; }));
  });
  again.join();
  g.open = true;
  ASSERT_TRUE(knit_test::eventually([&] { return g.returned == 1; }));
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return p.stats().retired_running == 0; }));
  p.shutdown();
}

// A stop deadline on an attached host: give_up() cancels what has not started and gives
// up what runs, all delivered on this thread at once; this host retires the worker.
TEST(many_hosts_stuck, give_up_cancels_queued_and_running_calls_on_the_host_thread) {
  knit::pool_options o = two_workers();
  o.threads = 1;
  knit::pool p(o);
  close_gate();
  knit::shutdown_report report;
  int cancelled = 0, on_other_thread = 0;
  knit_test::host_thread t(p, [&](knit::pool_host& h) {
    const auto me = std::this_thread::get_id();
    auto handler = [&](knit::result<int> r) {
      if (std::this_thread::get_id() != me) ++on_other_thread;
      if (r.error() == knit::errc::cancelled) ++cancelled;
    };
    ASSERT_FALSE(h.submit(
        [](int x) {
          g.wait();
          return x;
        },
        0, handler));
    ASSERT_TRUE(knit_test::eventually([&] { return g.waiting == 1; }));
    for (int i = 1; i <= 3; ++i) ASSERT_FALSE(h.submit([](int x) { return x; }, i, handler));
    report = h.give_up();
    EXPECT_EQ(h.pending(), 0u);
    // Still attached: a later call runs on the replacement.
    bool later = false;
    ASSERT_FALSE(
        h.submit([](int x) { return x; }, 9, [&](knit::result<int> r) { later = r.ok(); }));
    EXPECT_TRUE(knit_test::drain_host_until(h, [&] { return later; }));
  });
  // The host replaced the worker itself, whether or not host 0 drains.
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return p.stats().workers_replaced == 1; }));
  t.join();
  EXPECT_EQ(report.cancelled_at_deadline, 3u);
  EXPECT_EQ(report.abandoned_running, 1u);
  EXPECT_EQ(cancelled, 4);
  EXPECT_EQ(on_other_thread, 0);
  g.open = true;
  ASSERT_TRUE(knit_test::eventually([&] { return g.returned == 1; }));
  p.shutdown();
}

}  // namespace

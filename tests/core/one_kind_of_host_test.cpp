// One kind of host (knit/pool.hpp, "Hosts" and "Shutdown, from any thread"): the pool shut
// down from a thread that is no host while hosts are attached and calls are in flight (and
// by two threads at once), what a thread that is no host reads (stats, the per-host
// queries), the building thread's attachment (made at its first submit, taken over by an
// asio_host, finished by the destructor on another thread), and asio_host with no builder
// case. ThreadSanitizer runs these too (./knit sanitize thread).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "knit/asio_host.hpp"
#include "knit/pool.hpp"
#include "knit/pool_host.hpp"
#include "support/gate.hpp"
#include "support/host_thread.hpp"
#include "support/pool_helpers.hpp"

namespace {

using namespace std::chrono_literals;

// A host's event loop, as the shutdown contract asks of it: submit until told to stop,
// drain, and leave once the pool stops accepting (or the test says so). Counts what its
// handlers saw; every handler must run on this thread.
struct looping_host {
  std::atomic<int> submitted{0}, delivered{0}, ok{0}, cancelled{0}, wrong_thread{0};
  std::atomic<bool> attached{false};
  std::error_code after_close;  // a submit once accepting() turned false
  std::thread thread;

  looping_host(knit::pool& p, knit_test::gate* block_first = nullptr) {
    thread = std::thread([this, &p, block_first] {
      knit::pool_host h(p);
      const auto me = std::this_thread::get_id();
      auto on = [this, me](knit::result<int> r) {
        if (std::this_thread::get_id() != me) ++wrong_thread;
        ++delivered;
        if (r.ok()) ++ok;
        else if (r.error() == knit::errc::cancelled) ++cancelled;
      };
      if (block_first) {
        EXPECT_FALSE(h.submit(
            [block_first](int x) {
              block_first->wait();
              return x;
            },
            0, on));
        ++submitted;
      }
      attached = true;
      while (h.accepting()) {
        for (int i = 0; i < 8; ++i) {
          if (!h.submit([](int x) { return x + 1; }, i, on)) ++submitted;
        }
        h.poll();
      }
      after_close = h.submit([](int x) { return x; }, 0, on);
    });  // leaves: what has not started is cancelled, the rest drained here
  }
  ~looping_host() {
    if (thread.joinable()) thread.join();
  }
};

// The owner shuts the pool down from a thread that is no host (and not its builder)
// while hosts submit: every host learns of it, takes part by leaving, every call it made
// is delivered once on its own thread, and a submit after the shutdown began gets
// errc::shut_down.
TEST(one_kind_of_host, shutdown_from_a_thread_that_is_no_host_while_hosts_submit) {
  knit::pool_options o;
  o.threads = 2;
  knit::pool p(o);
  std::vector<std::unique_ptr<looping_host>> hosts;
  for (int i = 0; i < 3; ++i) hosts.push_back(std::make_unique<looping_host>(p));
  for (auto& h : hosts) ASSERT_TRUE(knit_test::eventually([&] { return h->delivered > 50; }));
  std::thread owner([&] {
    EXPECT_FALSE(p.is_host());
    const auto report =
        p.shutdown(knit::shutdown_mode::drain, std::chrono::steady_clock::now() + 30s);
    EXPECT_FALSE(report.deadline_passed);
    EXPECT_FALSE(p.accepting());
    // It returned only once every host had left: each one's calls are all delivered.
    for (auto& h : hosts) {
      EXPECT_EQ(h->delivered.load(), h->submitted.load()) << "every accepted call, once";
    }
    const knit::pool_stats s = p.stats();
    EXPECT_EQ(s.calls_submitted, s.calls_completed);
  });
  owner.join();
  for (auto& h : hosts) {
    h->thread.join();
    EXPECT_EQ(h->wrong_thread.load(), 0);
    EXPECT_EQ(h->after_close, knit::errc::shut_down);
  }
  EXPECT_THROW(knit::pool_host{p}, std::logic_error) << "no thread attaches after the shutdown";
}

// The same with a deadline and a call that never returns on one host: that host gives it
// up on its own thread at the deadline, and the report of the shutdown, called on a
// thread that is no host, counts it.
TEST(one_kind_of_host, shutdown_from_no_host_gives_up_a_hosts_call_at_the_deadline) {
  static knit_test::gate g;  // static: the abandoned worker may outlive this test
  // A run before this one (--gtest_repeat) waited for its worker to leave the gate: start
  // the counts afresh, or the waits below would pass at once.
  g.open = false;
  g.waiting = 0;
  g.returned = 0;
  knit::pool_options o;
  o.threads = 2;
  auto p = std::make_unique<knit::pool>(o);
  looping_host blocked(*p, &g);
  ASSERT_TRUE(knit_test::eventually([&] { return g.waiting == 1; }));
  knit::shutdown_report report;
  std::thread owner([&] {
    report = p->shutdown(knit::shutdown_mode::drain, std::chrono::steady_clock::now() + 100ms);
  });
  owner.join();
  blocked.thread.join();
  EXPECT_TRUE(report.deadline_passed);
  EXPECT_EQ(report.abandoned_running, 1u) << report.describe();
  EXPECT_EQ(report.threads_detached, 1u) << report.describe();
  EXPECT_EQ(blocked.wrong_thread.load(), 0);
  EXPECT_EQ(blocked.delivered.load(), blocked.submitted.load());
  g.open = true;
  ASSERT_TRUE(knit_test::eventually([&] { return g.returned == 1; }));
  p.reset();
}

// Two threads shut down at once: a host (whose own calls finish on it, in its call) and a
// thread that is no host. Both return once the workers are stopped; one report says what
// was given up (nothing here), the other is empty.
TEST(one_kind_of_host, a_host_and_a_stranger_shut_down_at_once) {
  knit::pool_options o;
  o.threads = 2;
  knit::pool p(o);
  std::atomic<bool> host_ready{false}, go{false}, host_returned{false};
  std::atomic<int> host_delivered{0};
  std::thread host([&] {
    knit::pool_host h(p);
    for (int i = 0; i < 200; ++i) {
      EXPECT_FALSE(h.submit([](int x) { return x; }, i,
                            [&](knit::result<int> r) {
                              EXPECT_TRUE(r.ok());
                              ++host_delivered;
                            }));
    }
    host_ready = true;
    while (!go) std::this_thread::yield();
    p.shutdown();  // drains this host's 200 calls here, then waits for the stop
    EXPECT_EQ(host_delivered.load(), 200);
    host_returned = true;
    EXPECT_EQ(h.submit([](int x) { return x; }, 0, [](knit::result<int>) {}),
              knit::errc::shut_down);
  });  // leaves with nothing left
  ASSERT_TRUE(knit_test::eventually([&] { return host_ready.load(); }));
  std::thread stranger([&] {
    while (!go) std::this_thread::yield();
    p.shutdown();
    EXPECT_FALSE(p.accepting());
  });
  go = true;
  stranger.join();
  host.join();
  EXPECT_TRUE(host_returned.load());
  EXPECT_EQ(p.stats().calls_completed, 200u);
}

// pool::stats() on a thread that is no host, while hosts submit: whole-pool figures,
// correct there (ThreadSanitizer: only counters are read); the per-host queries answer for
// a host with no call, never another host's figures.
TEST(one_kind_of_host, a_thread_that_is_no_host_reads_stats_and_empty_per_host_answers) {
  knit::pool_options o;
  o.threads = 2;
  knit::pool p(o);
  // The builder has calls of its own pending, so "host 0's figures" would not be empty.
  knit_test::gate g;
  knit::call_options soon;
  soon.timeout = 60s;
  ASSERT_FALSE(p.submit(
      [&g](int x) {
        g.wait();
        return x;
      },
      1, [](knit::result<int>) {}, soon));
  ASSERT_EQ(p.pending(), 1u);
  std::vector<std::unique_ptr<looping_host>> hosts;
  for (int i = 0; i < 2; ++i) hosts.push_back(std::make_unique<looping_host>(p));
  std::thread stranger([&] {
    for (int i = 0; i < 200; ++i) {
      const knit::pool_stats s = p.stats();
      EXPECT_LE(s.calls_completed, s.calls_submitted);
    }
    EXPECT_FALSE(p.is_host());
    EXPECT_EQ(p.pending(), 0u);
    EXPECT_FALSE(p.next_deadline().has_value());
    EXPECT_EQ(p.call_time_estimate().count(), 0);
    EXPECT_EQ(p.completion_fd(), -1);
    EXPECT_TRUE(p.accepting());
    EXPECT_THROW((void)p.drain(), std::logic_error);
  });
  stranger.join();
  for (auto& h : hosts) ASSERT_TRUE(knit_test::eventually([&] { return h->delivered > 10; }));
  const knit::pool_stats s = p.stats();
  EXPECT_EQ(s.hosts.size(), 3u) << "the builder and two attached hosts";
  g.open = true;
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return p.pending() == 0; }));
  p.shutdown();  // on the builder: its own part here, the loops leave on theirs
  for (auto& h : hosts) h->thread.join();
}

// The building thread takes no index until it submits: with max_hosts = 1 another thread
// attaches while the builder has not submitted, and then the builder's first submit finds
// no index free (std::logic_error, nothing moved), drain/poll/cancel there find nothing.
TEST(one_kind_of_host, a_builder_that_never_submits_takes_no_index) {
  knit::pool_options o;
  o.max_hosts = 1;
  knit::pool p(o);
  EXPECT_FALSE(p.is_host());
  EXPECT_EQ(p.drain(), 0u);
  EXPECT_EQ(p.poll(), 0u);
  EXPECT_FALSE(p.cancel(1));
  std::atomic<bool> attached{false}, release{false};
  std::thread t([&] {
    knit::pool_host h(p);
    EXPECT_EQ(h.index(), 0u);
    attached = true;
    while (!release) std::this_thread::sleep_for(1ms);
  });
  ASSERT_TRUE(knit_test::eventually([&] { return attached.load(); }));
  std::string message;
  try {
    (void)p.submit([](int x) { return x; }, 1, [](knit::result<int>) {});
  } catch (const std::logic_error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("max_hosts=1"), std::string::npos) << message;
  release = true;
  t.join();
  int done = 0;
  ASSERT_FALSE(p.submit([](int x) { return x; }, 2, [&](knit::result<int>) { ++done; }));
  EXPECT_TRUE(p.is_host());
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return done == 1; }));
}

// asio_host has no builder case: on the building thread it attaches like anywhere else (or
// takes over the attachment the builder's submit made: same index, its pending call
// delivered on this io_context), give_up() gives up its calls, and destroying it leaves:
// the thread is no host any more.
TEST(one_kind_of_host, asio_host_on_the_building_thread_is_an_attached_host_like_any_other) {
  knit::pool_options o;
  o.threads = 1;
  knit::pool p(o);
  knit_test::gate g;
  std::error_code first, given_up;
  ASSERT_FALSE(p.submit(
      [&g](int x) {
        g.wait();
        return x;
      },
      1, [&](knit::result<int> r) { first = r.error(); }));
  ASSERT_TRUE(p.is_host());
  ASSERT_TRUE(knit_test::eventually([&] { return g.waiting == 1; }));  // it runs
  const knit::pool_stats before = p.stats();
  boost::asio::io_context io;
  {
    knit::asio_host host(io, p);  // takes the builder's attachment over
    EXPECT_EQ(p.pending(), 1u) << "the same host, its call still pending";
    ASSERT_FALSE(host.submit([](int x) { return x; }, 2,
                             [&](knit::result<int> r) { given_up = r.error(); }));
    const knit::shutdown_report r = host.give_up();  // both of its calls, delivered here
    EXPECT_EQ(r.abandoned_running, 1u) << r.describe();
    EXPECT_EQ(r.cancelled_at_deadline, 1u) << r.describe();
    EXPECT_EQ(given_up, knit::errc::cancelled);
    EXPECT_EQ(first, knit::errc::cancelled);
    g.open = true;
    // The retired worker must be out of the gate before `g` goes.
    ASSERT_TRUE(knit_test::eventually([&] { return g.returned == 1; }));
  }  // leaves
  EXPECT_FALSE(p.is_host());
  EXPECT_EQ(p.completion_fd() >= 0, true) << "the builder attaches again when it asks";
  EXPECT_TRUE(p.is_host());
  EXPECT_EQ(before.calls_submitted + 1, p.stats().calls_submitted);
  // A fresh asio_host on the building thread, which is a host again: taken over once more.
  boost::asio::io_context io2;
  knit::asio_host again(io2, p);
  int v = 0;
  ASSERT_FALSE(
      again.submit([](int x) { return x * 3; }, 5, [&](knit::result<int> r) { v = r.value(); }));
  io2.run_for(30s);
  EXPECT_EQ(v, 15);
}

// The destructor on a thread that is not the builder, the builder's attachment still
// holding a call (its thread no longer uses the pool: the contract): it finishes that call
// there, and waits for the attached host to leave.
TEST(one_kind_of_host, the_destructor_on_another_thread_finishes_the_builders_attachment) {
  std::unique_ptr<knit::pool> p;
  std::atomic<int> builder_calls{0};
  std::thread([&] {
    p = std::make_unique<knit::pool>();
    ASSERT_FALSE(p->submit([](int x) { return x; }, 1,
                           [&](knit::result<int> r) { builder_calls += r.ok(); }));
  }).join();  // the builder is gone with a call not delivered
  p.reset();
  EXPECT_EQ(builder_calls.load(), 1);
}

}  // namespace

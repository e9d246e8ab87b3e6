// Many hosts, one pool (knit/pool_host.hpp, src/host_state.hpp): handlers on the submitting
// thread, attach and leave, admission, deadlines and cancellation per host, the builder's
// shutdown with hosts attached, and one regression test per interleaving the protocol in
// src/host_state.hpp guards (named after it; docs/many-hosts.md lists them).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "knit/async_run.hpp"
#include "knit/pool.hpp"
#include "knit/pool_host.hpp"
#include "support/gate.hpp"
#include "support/host_thread.hpp"
#include "support/pool_helpers.hpp"

namespace {

using namespace std::chrono_literals;

TEST(many_hosts, handlers_run_on_the_submitting_thread) {
  knit::pool_options o;
  o.threads = 3;
  knit::pool p(o);
  constexpr int kHosts = 4, kCalls = 2000;
  std::atomic<int> wrong_thread{0}, done_total{0};
  std::vector<std::unique_ptr<knit_test::host_thread>> hosts;
  for (int h = 0; h < kHosts; ++h) {
    hosts.push_back(std::make_unique<knit_test::host_thread>(p, [&](knit::pool_host& host) {
      const auto me = std::this_thread::get_id();
      int done = 0;
      for (int i = 0; i < kCalls; ++i) {
        EXPECT_FALSE(host.submit([](int x) { return x * 2; }, i,
                                 [&, i](knit::result<int> r) {
                                   if (std::this_thread::get_id() != me) ++wrong_thread;
                                   EXPECT_TRUE(r.ok());
                                   EXPECT_EQ(r.value(), i * 2);
                                   ++done;
                                 }));
      }
      EXPECT_TRUE(knit_test::drain_host_until(host, [&] { return done == kCalls; }));
      done_total += done;
    }));
  }
  // The builder submits at the same time.
  int mine = 0;
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_FALSE(p.submit([](int x) { return x; }, i, [&](knit::result<int>) { ++mine; }));
  }
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return mine == kCalls; }));
  hosts.clear();
  EXPECT_EQ(done_total.load(), kHosts * kCalls);
  EXPECT_EQ(wrong_thread.load(), 0);
}

TEST(many_hosts, a_thread_that_is_no_host_gets_the_logic_error) {
  knit::pool p;
  std::string message;
  std::thread([&] {
    try {
      (void)p.submit([](int x) { return x; }, 1, [](knit::result<int>) {});
    } catch (const std::logic_error& e) {
      message = e.what();
    }
  }).join();
  EXPECT_NE(message.find("no host"), std::string::npos) << message;
}

TEST(many_hosts, attaching_twice_or_past_max_hosts_throws) {
  knit::pool_options o;
  o.max_hosts = 2;  // the builder and one more
  knit::pool p(o);
  int mine = 0;  // the builder's first submit attaches it (index 0)
  ASSERT_FALSE(p.submit([](int x) { return x; }, 1, [&](knit::result<int>) { ++mine; }));
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return mine == 1; }));
  std::atomic<bool> attached{false}, release{false};
  std::thread a([&] {
    knit::pool_host h(p);
    EXPECT_EQ(h.index(), 1u);
    EXPECT_THROW(knit::pool_host{p}, std::logic_error);  // twice on one thread
    attached = true;
    while (!release) std::this_thread::sleep_for(1ms);
  });
  while (!attached) std::this_thread::sleep_for(1ms);
  std::string message;
  std::thread([&] {
    try {
      knit::pool_host h(p);
    } catch (const std::logic_error& e) {
      message = e.what();
    }
  }).join();
  EXPECT_NE(message.find("max_hosts=2"), std::string::npos) << message;
  release = true;
  a.join();
  // The index is free again.
  std::thread([&] {
    knit::pool_host h(p);
    EXPECT_EQ(h.index(), 1u);
  }).join();
}

TEST(many_hosts, leaving_cancels_calls_not_started_and_drains_running_ones_on_its_thread) {
  knit::pool_options o;
  o.threads = 1;
  knit::pool p(o);
  knit_test::gate g;
  std::atomic<int> cancelled{0}, ran{0}, wrong_thread{0};
  std::thread t([&] {
    const auto me = std::this_thread::get_id();
    {
      knit::pool_host h(p);
      auto on = [&](knit::result<int> r) {
        if (std::this_thread::get_id() != me) ++wrong_thread;
        if (r.ok()) ++ran;
        else if (r.error() == knit::errc::cancelled) ++cancelled;
      };
      EXPECT_FALSE(h.submit(
          [&g](int x) {
            g.wait();
            return x;
          },
          0, on));
      for (int i = 0; i < 5; ++i) EXPECT_FALSE(h.submit([](int x) { return x; }, i, on));
      while (g.waiting == 0) std::this_thread::sleep_for(1ms);
      std::thread([&g] {
        std::this_thread::sleep_for(50ms);
        g.open = true;
      }).detach();
    }  // leaves: 5 cancelled at once, the running one delivered here once the gate opens
    EXPECT_EQ(cancelled.load(), 5);
    EXPECT_EQ(ran.load(), 1);
  });
  t.join();
  EXPECT_EQ(wrong_thread.load(), 0);
}

TEST(many_hosts, deadlines_cancel_and_max_pending_are_per_host) {
  knit::pool_options o;
  o.threads = 1;
  o.max_pending = 3;
  knit::pool p(o);
  knit_test::gate g;
  // The builder fills its own budget; an attached host still has all of its own.
  for (int i = 0; i < 3; ++i) {
    ASSERT_FALSE(p.submit(
        [&g](int x) {
          g.wait();
          return x;
        },
        i, [](knit::result<int>) {}));
  }
  EXPECT_EQ(p.submit([](int x) { return x; }, 9, [](knit::result<int>) {}), knit::errc::queue_full);
  // The one worker is inside a gated call before the host's calls queue behind it.
  ASSERT_TRUE(knit_test::eventually([&] { return g.waiting == 1; }));
  knit_test::host_thread t(p, [&](knit::pool_host& h) {
    std::error_code timed, cancelled;
    knit::call_id id = 0;
    knit::call_options soon;
    soon.timeout = 20ms;
    EXPECT_FALSE(h.submit([](int x) { return x; }, 1,
                          [&](knit::result<int> r) { timed = r.error(); }, soon));
    EXPECT_FALSE(h.submit([](int x) { return x; }, 2,
                          [&](knit::result<int> r) { cancelled = r.error(); }, {}, &id));
    EXPECT_FALSE(h.submit([](int x) { return x; }, 3, [](knit::result<int>) {}));
    EXPECT_EQ(h.submit([](int x) { return x; }, 4, [](knit::result<int>) {}),
              knit::errc::queue_full);
    EXPECT_TRUE(h.cancel(id));
    EXPECT_EQ(cancelled, knit::errc::cancelled);
    EXPECT_TRUE(knit_test::drain_host_until(h, [&] { return bool(timed); }));
    EXPECT_EQ(timed, knit::errc::timed_out);
    const knit::host_stats s = h.stats();
    EXPECT_EQ(s.calls_timed_out, 1u);
    EXPECT_EQ(s.calls_cancelled, 1u);
    EXPECT_EQ(s.calls_rejected, 1u);
    g.open = true;
  });
  t.join();
  p.shutdown();
}

TEST(many_hosts, max_pending_total_bounds_the_sum_over_every_host) {
  knit::pool_options o;
  o.threads = 1;
  o.max_pending_total = 4;
  knit::pool p(o);
  knit_test::gate g;
  for (int i = 0; i < 3; ++i) {
    ASSERT_FALSE(p.submit(
        [&g](int x) {
          g.wait();
          return x;
        },
        i, [](knit::result<int>) {}));
  }
  knit_test::host_thread t(p, [&](knit::pool_host& h) {
    int done = 0;
    EXPECT_FALSE(h.submit([](int x) { return x; }, 1, [&](knit::result<int>) { ++done; }));
    EXPECT_EQ(h.submit([](int x) { return x; }, 2, [](knit::result<int>) {}),
              knit::errc::queue_full);
    g.open = true;  // the builder's calls finish; its count drops once it drains them
    EXPECT_TRUE(knit_test::drain_host_until(h, [&] { return done == 1; }));
  });
  t.join();
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return p.pending() == 0; }));
  int late = 0;
  EXPECT_FALSE(p.submit([](int x) { return x; }, 9, [&](knit::result<int>) { ++late; }));
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return late == 1; }));
}

// Guarantee 1 of the protocol: the worker finds its ring from host h empty and clears bit
// h while host h pushes one more call; either the worker's re-check sees the call or the
// host sees the cleared bit and sets it again. One call at a time makes every push land on
// a ring that just ran dry.
TEST(many_hosts, ring_runs_dry_while_its_host_pushes) {
  knit::pool_options o;
  o.threads = 2;
  o.spin_us = 20;  // workers spin through claim, clearing and re-setting bits
  knit::pool p(o);
  knit_test::host_thread t(p, [&](knit::pool_host& h) {
    for (int i = 0; i < 3000; ++i) {
      bool done = false;
      ASSERT_FALSE(h.submit([](int x) { return x; }, i, [&](knit::result<int>) { done = true; }));
      ASSERT_TRUE(knit_test::drain_host_until(
          h, [&] { return done; }, 10s))
          << "call " << i;
    }
  });
}

// Guarantee 2: the worker parks (state parked, fence, re-check of the rings its mask
// names) while the host pushes and sets its bit; the host's wake check follows a fence
// after both its push and its fetch_or. No spinning, parking until woken: a lost wake-up
// hangs the call and fails the test.
TEST(many_hosts, worker_parks_while_a_host_pushes_and_sets_its_bit) {
  knit::pool_options o;
  o.threads = 1;
  o.spin_us = 0;
  o.park_ms = 0;
  knit::pool p(o);
  knit_test::host_thread t(p, [&](knit::pool_host& h) {
    for (int i = 0; i < 3000; ++i) {
      bool done = false;
      ASSERT_FALSE(h.submit([](int x) { return x; }, i, [&](knit::result<int>) { done = true; }));
      ASSERT_TRUE(knit_test::drain_host_until(
          h, [&] { return done; }, 10s))
          << "call " << i;
      if (i % 64 == 0) std::this_thread::sleep_for(100us);  // let the worker reach its park
    }
  });
}

// A fresh worker replacing a retired one may park before anyone rings it; the seat is
// published before its thread starts, so an attached host rings the right doorbell, and
// the calls that host queued into the seat run on the fresh worker.
TEST(many_hosts, replacement_parks_before_its_seat_is_published) {
  knit::pool_options o;
  o.threads = 1;
  o.spin_us = 0;
  o.steal = false;
  knit::pool p(o);
  knit_test::gate g;
  knit::call_options stuck;
  stuck.stuck_after = 30ms;
  std::error_code first;
  ASSERT_FALSE(p.submit(
      [&g](int x) {
        g.wait();
        return x;
      },
      0, [&](knit::result<int> r) { first = r.error(); }, stuck));
  std::atomic<bool> attached{false};
  std::atomic<int> done{0};
  std::atomic<bool> finish{false};
  knit_test::host_thread t(p, [&](knit::pool_host& h) {
    // Queued behind the stuck call, into the same seat.
    for (int i = 0; i < 10; ++i) {
      EXPECT_FALSE(h.submit([](int x) { return x; }, i,
                            [&](knit::result<int> r) {
                              EXPECT_TRUE(r.ok());
                              ++done;
                            }));
    }
    attached = true;
    EXPECT_TRUE(knit_test::drain_host_until(h, [&] { return done == 10; }));
    // And after the replacement, one at a time through its parks.
    for (int i = 0; i < 200; ++i) {
      bool one = false;
      EXPECT_FALSE(h.submit([](int x) { return x; }, i, [&](knit::result<int>) { one = true; }));
      EXPECT_TRUE(knit_test::drain_host_until(
          h, [&] { return one; }, 10s));
    }
    while (!finish) std::this_thread::sleep_for(1ms);
  });
  while (!attached) std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return bool(first); }));
  EXPECT_EQ(first, knit::errc::stuck);
  ASSERT_TRUE(knit_test::eventually([&] { return done == 10; }));
  finish = true;
  t.join();
  g.open = true;
  // The retired worker must be out of the gate before `g` goes (else shutdown detaches it).
  ASSERT_TRUE(knit_test::eventually([&] { return g.returned == 1; }));
  p.shutdown();
  EXPECT_EQ(p.stats().workers_replaced, 1u);
}

// One host flooding the pool cannot starve another: a worker takes turns between the
// rings of the hosts with work for its seat (host 0's, the builder's, is one of them).
// Order-based: the one worker is held by a gate until the whole flood is queued and the
// other host's call is in its ring, then each call takes the next number as it runs.
TEST(many_hosts, a_flooding_host_does_not_starve_another) {
  knit::pool_options o;
  o.threads = 1;
  knit::pool p(o);
  knit_test::gate g;
  std::atomic<int> order{0};
  constexpr int kFlood = 2000;
  int flood_done = 0;
  ASSERT_FALSE(p.submit(
      [&](int) {
        g.wait();
        return order.fetch_add(1);
      },
      0, [&](knit::result<int>) { ++flood_done; }));
  while (g.waiting.load() == 0) std::this_thread::yield();
  for (int i = 1; i < kFlood; ++i) {
    ASSERT_FALSE(p.submit([&](int) { return order.fetch_add(1); }, i,
                          [&](knit::result<int>) { ++flood_done; }));
  }
  std::atomic<bool> queued{false};
  std::atomic<int> served_at{-1};  // written by the worker as it runs the other host's call
  knit_test::host_thread t(p, [&](knit::pool_host& h) {
    bool done = false;
    EXPECT_FALSE(h.submit(
        [&](int) {
          served_at = order.fetch_add(1);
          return 0;
        },
        1, [&](knit::result<int>) { done = true; }));
    queued = true;
    EXPECT_TRUE(knit_test::drain_host_until(h, [&] { return done; }));
  });
  while (!queued.load()) std::this_thread::yield();
  g.open = true;
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return flood_done == kFlood; }));
  t.join();
  // Served within the first few claims once the worker was free, not after the flood
  // (position kFlood): the worker took its turn at the other host's ring.
  EXPECT_GE(served_at.load(), 0);
  EXPECT_LT(served_at.load(), 16) << "served after " << served_at << " of the flood's calls";
  const auto s = p.stats();
  ASSERT_EQ(s.workers.size(), 1u);
  EXPECT_EQ(s.workers[0].calls_run, static_cast<std::uint64_t>(kFlood + 1));
}

// A seat serves the hosts with work for it in turn, the builder included. One worker is
// held by a gate while the builder and three attached hosts queue kCalls each into its one
// seat; once it opens, every run of kHosts consecutive claims holds one call of each host.
// Count-based: the order of claims is what the worker records, one at a time.
TEST(many_hosts, flooding_hosts_share_a_seat_in_turn) {
  knit::pool_options o;
  o.threads = 1;
  o.steal = false;
  knit::pool p(o);
  constexpr int kHosts = 4, kCalls = 200;
  knit_test::gate g;
  std::vector<int> order(kHosts * kCalls + 1, -1);
  std::atomic<int> claimed{0};  // written by the one worker only
  auto record = [&](int host) {
    order[static_cast<std::size_t>(claimed.load())] = host;
    claimed.store(claimed.load() + 1);
    return host;
  };
  int gate_done = 0;
  ASSERT_FALSE(p.submit(
      [&](int host) {
        g.wait();
        return record(host);
      },
      0, [&](knit::result<int>) { ++gate_done; }));
  ASSERT_TRUE(knit_test::eventually([&] { return g.waiting == 1; }));
  std::atomic<int> queued{0};
  std::atomic<bool> go{false};
  std::vector<std::unique_ptr<knit_test::host_thread>> hosts;
  for (int h = 1; h < kHosts; ++h) {
    hosts.push_back(std::make_unique<knit_test::host_thread>(p, [&, h](knit::pool_host& host) {
      int done = 0;
      for (int i = 0; i < kCalls; ++i) {
        EXPECT_FALSE(host.submit(record, h, [&](knit::result<int>) { ++done; }));
      }
      ++queued;
      EXPECT_TRUE(knit_test::drain_host_until(host, [&] { return done == kCalls; }));
    }));
  }
  int mine = 0;
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_FALSE(p.submit(record, 0, [&](knit::result<int>) { ++mine; }));
  }
  ASSERT_TRUE(knit_test::eventually([&] { return queued == kHosts - 1; }));
  g.open = true;
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return mine == kCalls && gate_done == 1; }));
  hosts.clear();
  ASSERT_EQ(claimed.load(), kHosts * kCalls + 1);
  EXPECT_EQ(order[0], 0);  // the gate call
  std::vector<int> share(kHosts, 0);
  int bad_rounds = 0;
  for (int round = 0; round < kCalls; ++round) {
    std::vector<bool> seen(kHosts, false);
    for (int k = 0; k < kHosts; ++k) {
      const int host = order[static_cast<std::size_t>(1 + round * kHosts + k)];
      ASSERT_GE(host, 0);
      ++share[static_cast<std::size_t>(host)];
      if (seen[static_cast<std::size_t>(host)]) ++bad_rounds;
      seen[static_cast<std::size_t>(host)] = true;
    }
  }
  EXPECT_EQ(bad_rounds, 0);
  for (int h = 0; h < kHosts; ++h) EXPECT_EQ(share[static_cast<std::size_t>(h)], kCalls) << h;
}

// pool::stats() on an attached host's thread, while the builder submits: the totals count
// both hosts (ThreadSanitizer: only counters are read there).
TEST(many_hosts, stats_are_read_on_an_attached_hosts_thread) {
  knit::pool_options o;
  o.threads = 2;
  knit::pool p(o);
  std::atomic<bool> builder_done{false};
  knit::pool_stats seen;
  knit_test::host_thread t(p, [&](knit::pool_host& h) {
    int done = 0;
    for (int i = 0; i < 100; ++i) {
      EXPECT_FALSE(h.submit([](int x) { return x; }, i, [&](knit::result<int>) { ++done; }));
      (void)p.stats();  // concurrent with the builder's own calls
    }
    EXPECT_TRUE(knit_test::drain_host_until(h, [&] { return done == 100; }));
    EXPECT_TRUE(knit_test::eventually([&] { return builder_done.load(); }));
    seen = p.stats();
  });
  int mine = 0;
  for (int i = 0; i < 100; ++i) {
    ASSERT_FALSE(p.submit([](int x) { return x; }, i, [&](knit::result<int>) { ++mine; }));
  }
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return mine == 100; }));
  builder_done = true;
  t.join();
  EXPECT_EQ(seen.calls_submitted, 200u);
  EXPECT_EQ(seen.calls_completed, 200u);
  ASSERT_EQ(seen.hosts.size(), 2u);
  EXPECT_EQ(seen.hosts[0].calls_completed, 100u);
  EXPECT_EQ(seen.hosts[1].calls_completed, 100u);
  EXPECT_EQ(seen.workers.size(), 2u);
}

TEST(many_hosts, the_builders_shutdown_waits_for_attached_hosts_to_leave) {
  knit::pool_options o;
  o.threads = 2;
  auto p = std::make_unique<knit::pool>(o);
  std::atomic<bool> attached{false};
  std::atomic<int> delivered{0};
  std::error_code after_close;
  std::thread t([&] {
    knit::pool_host h(*p);
    for (int i = 0; i < 100; ++i) {
      EXPECT_FALSE(h.submit([](int x) { return x; }, i, [&](knit::result<int>) { ++delivered; }));
    }
    attached = true;
    // The event loop runs until the pool stops accepting, then this host leaves.
    while (h.accepting()) {
      h.drain();
      std::this_thread::sleep_for(1ms);
    }
    after_close = h.submit([](int x) { return x; }, 0, [](knit::result<int>) {});
  });
  while (!attached) std::this_thread::sleep_for(1ms);
  p.reset();  // closes admission everywhere, waits for the host to leave, stops the workers
  t.join();
  EXPECT_EQ(delivered.load(), 100);
  EXPECT_EQ(after_close, knit::errc::shut_down);
}

TEST(many_hosts, pool_stats_list_every_attached_host) {
  knit::pool p;
  int mine = 0;  // the builder's first submit attaches it (index 0)
  ASSERT_FALSE(p.submit([](int x) { return x; }, 1, [&](knit::result<int>) { ++mine; }));
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return mine == 1; }));
  std::atomic<bool> ready{false}, release{false};
  knit_test::host_thread t(p, [&](knit::pool_host& h) {
    bool done = false;
    EXPECT_FALSE(h.submit([](int x) { return x; }, 1, [&](knit::result<int>) { done = true; }));
    EXPECT_TRUE(knit_test::drain_host_until(h, [&] { return done; }));
    ready = true;
    while (!release) std::this_thread::sleep_for(1ms);
  });
  while (!ready) std::this_thread::sleep_for(1ms);
  const knit::pool_stats s = p.stats();
  ASSERT_EQ(s.hosts.size(), 2u);
  EXPECT_EQ(s.hosts[1].index, 1u);
  EXPECT_EQ(s.hosts[1].calls_submitted, 1u);
  EXPECT_NE(knit::to_json(s).find("\"hosts\":[{\"index\":0"), std::string::npos);
  release = true;
  t.join();
  EXPECT_EQ(knit::to_json(p.stats()).find("\"hosts\""), std::string::npos);
}

TEST(many_hosts, asio_host_on_another_thread_attaches_and_leaves) {
  knit::pool_options o;
  o.threads = 2;
  knit::pool p(o);
  std::atomic<int> sum{0};
  std::thread t([&] {
    boost::asio::io_context io;
    {
      knit::asio_host host(io, p);
      for (int i = 1; i <= 10; ++i) {
        knit::async_run(
            host, [](int x) { return x; }, i,
            [&](boost::system::error_code ec, int v) {
              EXPECT_FALSE(ec);
              sum += v;
            });
      }
      io.run();
    }
    EXPECT_FALSE(p.is_host());  // it left
  });
  t.join();
  EXPECT_EQ(sum.load(), 55);
}

}  // namespace

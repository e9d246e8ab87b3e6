// Many-hosts stress (src/host_state.hpp): 4 attached hosts and the builder on one pool of 3
// workers, the attached hosts attaching and leaving over and over, calls cancelled, timed
// out and stuck on every host (the host that declares a call stuck retires its worker
// itself, and whichever host drains next frees the slot), small rings so the backlog and stealing
// are exercised. Every handler must run exactly once, on its own host's thread, with its own value.
// Run under ThreadSanitizer by
// `./knit sanitize thread`.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "knit/pool.hpp"
#include "knit/pool_host.hpp"
#include "support/gate.hpp"  // eventually()
#include "support/host_thread.hpp"
#include "support/pool_helpers.hpp"

namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t scaled(std::uint64_t n) {
  return n * KNIT_STRESS_SCALE / (KNIT_SANITIZED ? 4 : 1);
}

// Static: a stuck task's thread is retired; it must never outlive what it reads.
std::atomic<int> release_stuck{0};
std::atomic<int> stuck_started{0}, stuck_returned{0};

void wait_until_released() {
  ++stuck_started;
  while (release_stuck.load() == 0) std::this_thread::sleep_for(1ms);
  ++stuck_returned;
}

// One attachment's worth of calls: some cancelled at once, some with deadlines shorter
// than their run time, a rare one stuck until the test ends, the rest plain. Counts wrong
// deliveries in `wrong`; `hits[i]` counts call i's deliveries and `accepted[i]` says whether
// submit took it. `pending`, `hits` and `accepted` must outlive `h` (the handlers of calls
// still out when it leaves run in its destructor).
void one_session(knit::pool_host& h, std::mt19937& rng, int calls, std::atomic<int>& wrong,
                 std::atomic<std::uint64_t>& delivered, std::atomic<std::uint64_t>& stuck,
                 int& pending, std::vector<int>& hits, std::vector<char>& accepted) {
  const auto me = std::this_thread::get_id();
  std::vector<knit::call_id> ids;
  for (int i = 0; i < calls; ++i) {
    knit::call_options o;
    const unsigned kind = rng() % 8;
    if (kind == 0) o.timeout = 50us;
    const int spin_us = (kind == 1) ? 200 : 0;
    const bool make_stuck = rng() % 4000 == 0;
    if (make_stuck) o.stuck_after = 2ms;
    knit::call_id id = 0;
    const std::error_code ec = h.submit(
        [spin_us, make_stuck](int x) {
          if (make_stuck) wait_until_released();
          const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
          while (std::chrono::steady_clock::now() < until) {
          }
          return x + 1;
        },
        i,
        [&pending, &wrong, &delivered, &stuck, &hits, i, me](knit::result<int> r) {
          if (std::this_thread::get_id() != me) ++wrong;
          ++hits[static_cast<std::size_t>(i)];
          if (r.ok() && r.value() != i + 1) ++wrong;
          if (!r.ok() && r.error() == knit::errc::stuck) ++stuck;
          if (!r.ok() && r.error() != knit::errc::timed_out && r.error() != knit::errc::cancelled &&
              r.error() != knit::errc::stuck)
            ++wrong;
          --pending;
          ++delivered;
        },
        o, &id);
    if (ec) {
      if (ec != knit::errc::queue_full) ++wrong;
      continue;
    }
    ++pending;
    accepted[static_cast<std::size_t>(i)] = 1;
    if (kind == 2) ids.push_back(id);
    if (ids.size() > 4) {
      h.cancel(ids.front());
      ids.erase(ids.begin());
    }
    if (i % 32 == 0) h.poll();
  }
  // Leave early half the time: the destructor cancels the rest and drains the running.
  if (rng() & 1) {
    knit_test::drain_host_until(h, [&] { return pending == 0; });
    if (pending != 0) ++wrong;
  }
}

TEST(many_hosts_stress, hosts_attach_and_leave_under_cancel_timeout_and_stuck) {
  knit::pool_options o;
  o.threads = 3;
  o.queue_capacity = 16;
  o.max_pending = 200;
  o.spin_us = 20;
  knit::pool p(o);
  constexpr int kHosts = 4;
  const int sessions = static_cast<int>(scaled(200));
  std::atomic<int> wrong{0};
  std::atomic<std::uint64_t> delivered{0}, accepted_calls{0}, attached_stuck{0};
  std::atomic<bool> hosts_done{false};
  release_stuck = 0;
  stuck_started = 0;
  stuck_returned = 0;
  std::vector<std::thread> hosts;
  for (int h = 0; h < kHosts; ++h) {
    hosts.emplace_back([&, h] {
      std::mt19937 rng(1234u + static_cast<unsigned>(h));
      for (int s = 0; s < sessions; ++s) {
        constexpr int kCalls = 200;
        int pending = 0;
        std::vector<int> hits(kCalls, 0);
        std::vector<char> accepted(kCalls, 0);
        {
          knit::pool_host host(p);
          one_session(host, rng, kCalls, wrong, delivered, attached_stuck, pending, hits, accepted);
        }  // leaves: the calls still out are delivered (cancelled) in the destructor
        // Exactly once: every call submit took was delivered once, every refused one never,
        // whether the session drained or left with calls out.
        if (pending != 0) ++wrong;
        for (int i = 0; i < kCalls; ++i) {
          if (hits[static_cast<std::size_t>(i)] != (accepted[static_cast<std::size_t>(i)] ? 1 : 0))
            ++wrong;
          accepted_calls += accepted[static_cast<std::size_t>(i)] ? 1 : 0;
        }
      }
    });
  }
  // The builder: plain calls, and now and then one that gets stuck (retiring its worker
  // while the attached hosts' calls queue into the same seats).
  std::mt19937 rng(99);
  std::uint64_t mine_done = 0, mine_sent = 0, stuck = 0;
  std::vector<int> mine_hits;  // per accepted builder call: its deliveries
  std::thread joiner([&] {
    for (auto& t : hosts) t.join();
    hosts_done = true;
  });
  while (!hosts_done) {
    knit::call_options co;
    const bool make_stuck = rng() % 500 == 0;
    if (make_stuck) co.stuck_after = 2ms;
    mine_hits.push_back(0);  // before submit: its handler indexes it
    const std::error_code ec = p.submit(
        [make_stuck](int x) {
          if (make_stuck) wait_until_released();
          return x;
        },
        static_cast<int>(mine_sent),
        [&, index = mine_sent](knit::result<int> r) {
          ++mine_hits[index];
          ++mine_done;
          if (!r.ok() && r.error() == knit::errc::stuck) ++stuck;
        },
        co);
    if (!ec) ++mine_sent;
    else mine_hits.pop_back();
    if (mine_sent % 16 == 0) p.poll();
    if (p.pending() >= 150) knit_test::drain_until(p, [&] { return p.pending() < 50; });
  }
  joiner.join();
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return mine_done == mine_sent; }));
  release_stuck = 1;
  ASSERT_TRUE(knit_test::eventually([&] { return stuck_returned == stuck_started; }));
  p.shutdown();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(delivered.load(), accepted_calls.load());
  EXPECT_GT(accepted_calls.load(), 0u);
  EXPECT_EQ(std::count(mine_hits.begin(), mine_hits.end(), 1),
            static_cast<std::ptrdiff_t>(mine_hits.size()));
  // Every stuck call counted once, its worker retired, whichever host it came from (a
  // stuck call's deadline may have delivered timed_out first: never more than declared).
  EXPECT_GE(p.stats().calls_stuck, stuck + attached_stuck.load());
  EXPECT_LE(p.stats().calls_stuck, static_cast<std::uint64_t>(stuck_started.load()));
  EXPECT_GT(attached_stuck.load() + stuck, 0u);
  RecordProperty("stuck", std::to_string(stuck));
  RecordProperty("attached_stuck", std::to_string(attached_stuck.load()));
}

}  // namespace

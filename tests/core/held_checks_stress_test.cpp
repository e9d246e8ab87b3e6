// Held checks under stress ("Held checks" in src/host_state.hpp): three hosts that hold
// their checks push bursts of 1 to 64 calls into workers that never spin and park without
// a timeout (park_ms 0), so a worker goes to park as often as it can while pushes land. A
// check lost in the window the held path opens (a relaxed load of the mask that saw the
// bit set while the worker was clearing it, the check then left to the flush) strands a
// call for good: the host, which flushes before it sleeps as a loop must, then waits in
// vain and the test fails. Two layouts: one worker with a CPU of its own (held checks: a
// clear bit is rung inside submit) and two workers that share the hosts' CPUs (held wakes:
// every wake at the flush). Run under ThreadSanitizer by `./knit sanitize thread`.
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <random>
#include <thread>

#include "knit/pool.hpp"
#include "knit/pool_host.hpp"
#include "support/host_thread.hpp"

namespace {

constexpr int scaled(int n) { return n * KNIT_STRESS_SCALE / (KNIT_SANITIZED ? 4 : 1); }

int plus_one(int x) { return x + 1; }

struct tallies {
  std::atomic<int> stranded{0};  // a host waited 10 s with calls out and nothing came back
  std::atomic<int> wrong{0};     // a result that is not its call's
  std::atomic<std::uint64_t> delivered{0};
};

// One host's rounds: a burst, then, as an event loop does, flush, sleep on the completion
// fd, drain, until every call of the burst is back. `out` (the calls not back yet) and `t`
// outlive the host: a stranded host's calls are answered when it leaves.
void burst_rounds(knit::pool& p, unsigned seed, int rounds, tallies& t, int& out) {
  if (!p.hold_wakes(true)) {
    ++t.wrong;  // wake_at_turn_end is on: every host can hold its checks
    return;
  }
  std::mt19937 rng(seed);
  for (int r = 0; r < rounds; ++r) {
    const int burst = 1 + static_cast<int>(rng() % 64);
    for (int i = 0; i < burst; ++i) {
      const std::error_code ec = p.submit(plus_one, i, [&out, &t, i](knit::result<int> res) {
        if (!res.ok() || res.value() != i + 1) ++t.wrong;
        --out;
        ++t.delivered;
      });
      if (ec) {
        ++t.wrong;
        continue;
      }
      ++out;
    }
    while (out > 0) {
      p.flush_wakes();
      pollfd fd{p.completion_fd(), POLLIN, 0};
      if (::poll(&fd, 1, 10'000) == 0) {
        ++t.stranded;
        return;  // the host's destructor cancels or waits for what is left
      }
      p.drain();
    }
  }
  p.hold_wakes(false);
}

void run_layout(unsigned threads) {
  tallies t;  // before the pool: its destructor may answer a stranded host's calls
  int out_a = 0, out_b = 0, out_c = 0;
  knit::pool_options o;
  o.threads = threads;
  o.wake_at_turn_end = true;
  o.spin_us = 0;
  o.park_ms = 0;
  o.queue_capacity = 64;
  knit::pool p(o);
  const int rounds = scaled(6000);
  {
    knit_test::host_thread a(p, [&](knit::pool_host&) { burst_rounds(p, 11, rounds, t, out_a); });
    knit_test::host_thread b(p, [&](knit::pool_host&) { burst_rounds(p, 22, rounds, t, out_b); });
    burst_rounds(p, 33, rounds, t, out_c);
  }
  EXPECT_EQ(t.stranded.load(), 0) << "a host flushed, slept, and its calls never came back";
  EXPECT_EQ(t.wrong.load(), 0);
  EXPECT_GT(t.delivered.load(), static_cast<std::uint64_t>(rounds));
  const knit::pool_stats s = p.stats();
  std::uint64_t parks = 0;
  for (const knit::worker_stats& w : s.workers) parks += w.parks;
  std::printf("delivered %llu, worker parks %llu, host wakes %llu\n",
              static_cast<unsigned long long>(t.delivered.load()),
              static_cast<unsigned long long>(parks),
              static_cast<unsigned long long>(s.host_wakes));
}

TEST(held_checks_stress, one_worker_with_a_cpu_of_its_own_three_hosts) { run_layout(1); }

TEST(held_checks_stress, two_workers_on_the_hosts_cpus_three_hosts) { run_layout(2); }

}  // namespace

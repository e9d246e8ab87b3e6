// Idle cost: after warm-up, a 15-worker pool with the default policy must cost nothing
// while no calls arrive: no timed wake-ups, no context switches, under 0.01 cores in all.
// Measured from /proc/self/task/*/{schedstat,status} (ns of CPU, voluntary switches) and
// cross-checked with the pool's own counters. Asserts counts and a CPU bound, not timing.
#include <dirent.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "knit/pool.hpp"
#include "knit/pool_host.hpp"
#include "support/host_thread.hpp"
#include "support/pool_helpers.hpp"

namespace {

struct thread_sample {
  std::uint64_t cpu_ns = 0;
  std::uint64_t switches = 0;  // voluntary + involuntary
};

// Worker threads are named knit-worker-N (worker.cpp); only those are sampled.
std::map<int, thread_sample> sample_workers() {
  std::map<int, thread_sample> out;
  DIR* d = ::opendir("/proc/self/task");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string dir = std::string("/proc/self/task/") + e->d_name;
    std::string comm;
    std::getline(std::ifstream(dir + "/comm") >> std::ws, comm);
    if (comm.rfind("knit-worker-", 0) != 0) continue;
    thread_sample s;
    std::ifstream(dir + "/schedstat") >> s.cpu_ns;
    std::ifstream status(dir + "/status");
    std::string line;
    while (std::getline(status, line)) {
      std::istringstream ls(line);
      std::string key;
      std::uint64_t v = 0;
      ls >> key >> v;
      if (key == "voluntary_ctxt_switches:" || key == "nonvoluntary_ctxt_switches:")
        s.switches += v;
    }
    out[std::stoi(e->d_name)] = s;
  }
  ::closedir(d);
  return out;
}

TEST(idle_cost, fifteen_parked_workers_cost_nothing) {
  knit::pool_options o;
  o.threads = 15;  // the default policy: spin 0 at N >= 2, park until woken
  knit::pool p(o);
  int done = 0;
  for (int i = 0; i < 3000; ++i)
    ASSERT_FALSE(p.submit([](int x) { return x; }, i, [&](knit::result<int>) { ++done; }));
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return done == 3000; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let every worker reach its park

  const auto before_stats = p.stats().totals();
  const auto before = sample_workers();
  ASSERT_EQ(before.size(), 15u);
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto after = sample_workers();
  const auto after_stats = p.stats().totals();

  std::uint64_t cpu_ns = 0, switches = 0;
  for (const auto& [tid, s] : after) {
    cpu_ns += s.cpu_ns - before.at(tid).cpu_ns;
    switches += s.switches - before.at(tid).switches;
  }
  const double cores = static_cast<double>(cpu_ns) / 1e9 / seconds;
  RecordProperty("idle_cores", std::to_string(cores));
  EXPECT_EQ(switches, 0u) << "a parked worker must not wake at all while idle";
  EXPECT_LT(cores, 0.01) << "idle CPU of 15 workers over " << seconds << " s";
  EXPECT_EQ(after_stats.wakes_timeout - before_stats.wakes_timeout, 0u);
  EXPECT_EQ(after_stats.wakes_doorbell - before_stats.wakes_doorbell, 0u);
  EXPECT_EQ(after_stats.parks - before_stats.parks, 0u) << "no re-parks means no wake-ups";
}

// H attached hosts and W workers, all idle after traffic from every host: still no wake-up
// (a stale pending-host bit must not keep a worker from parking: host_state.hpp).
TEST(idle_cost, sixteen_workers_and_sixteen_hosts_idle_cost_nothing) {
  knit::pool_options o;
  o.threads = 16;
  o.max_hosts = 16;
  knit::pool p(o);
  constexpr int kAttached = 15;  // plus the builder: 16 hosts
  std::atomic<int> ready{0};
  std::atomic<bool> release{false};
  std::vector<std::thread> hosts;
  for (int h = 0; h < kAttached; ++h) {
    hosts.emplace_back([&] {
      knit::pool_host host(p);
      int done = 0;
      for (int i = 0; i < 200; ++i) {
        EXPECT_FALSE(host.submit([](int x) { return x; }, i, [&](knit::result<int>) { ++done; }));
      }
      EXPECT_TRUE(knit_test::drain_host_until(host, [&] { return done == 200; }));
      ++ready;
      while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    });
  }
  int done = 0;
  for (int i = 0; i < 200; ++i)
    ASSERT_FALSE(p.submit([](int x) { return x; }, i, [&](knit::result<int>) { ++done; }));
  ASSERT_TRUE(knit_test::drain_until(p, [&] { return done == 200 && ready == kAttached; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  const auto before_stats = p.stats().totals();
  const auto before = sample_workers();
  ASSERT_EQ(before.size(), 16u);
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto after = sample_workers();
  const auto after_stats = p.stats().totals();
  release = true;
  for (auto& t : hosts) t.join();

  std::uint64_t cpu_ns = 0, switches = 0;
  for (const auto& [tid, s] : after) {
    cpu_ns += s.cpu_ns - before.at(tid).cpu_ns;
    switches += s.switches - before.at(tid).switches;
  }
  const double cores = static_cast<double>(cpu_ns) / 1e9 / seconds;
  RecordProperty("idle_cores", std::to_string(cores));
  EXPECT_EQ(switches, 0u) << "a parked worker must not wake at all while idle";
  EXPECT_LT(cores, 0.01) << "idle CPU of 16 workers under 16 hosts over " << seconds << " s";
  EXPECT_EQ(after_stats.parks - before_stats.parks, 0u) << "no re-parks means no wake-ups";
}

TEST(idle_cost, timed_park_wakes_are_counted) {
  // The counters must see what /proc sees: with park_ms = 1 the workers do wake.
  knit::pool_options o;
  o.threads = 2;
  o.spin_us = 0;
  o.park_ms = 1;
  knit::pool p(o);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_GT(p.stats().totals().wakes_timeout, 10u);
}

}  // namespace

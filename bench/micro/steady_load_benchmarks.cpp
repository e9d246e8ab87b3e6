// Host cost under a steady stream: the host sends calls on a fixed schedule, blocks in
// ppoll() on the completion eventfd between sends (as an event loop would), and we count
// its own CPU per call and the FUTEX_WAKE syscalls it issued per call. Each call burns
// kTaskUs of worker CPU; the offered load keeps the workers half busy: 0.5 x min(N, CPUs-1)
// cores of work (on a 2-CPU machine 0.5 cores at every N: the host needs the other CPU).
// steady_load_host_cost pins the host before it builds the pool, so its workers inherit
// the host's one CPU; steady_load_host_cost_worker_apart pins its worker to the other one.
// Claims: ratios between policies in one run; absolute µs depend on the VM's wake cost.
#include <benchmark/benchmark.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#include "bench_support.hpp"
#include "knit/pool.hpp"

namespace {

constexpr double kTaskUs = 50.0;

std::uint64_t burn(std::uint64_t start_ns, double us) {
  std::uint64_t h = start_ns;
  while (static_cast<double>(knit_bench::thread_cpu_ns() - start_ns) < us * 1000.0) {
    for (int i = 0; i < 64; ++i) h = h * 6364136223846793005u + 1442695040888963407u;
  }
  return h;
}

enum policy { default_policy = 0, single_spinner = 1, old_default = 2 };

// workers_apart = false: the workers inherit the host's pin (one CPU for everything);
// true: they are pinned to the worker CPU (knit_bench::layout), the host keeps its own.
void run_steady_load(benchmark::State& state, bool workers_apart) {
  const int policy_id = static_cast<int>(state.range(0));
  const unsigned n = static_cast<unsigned>(state.range(1));
  const auto l = knit_bench::layout();
  knit_bench::pin_self(l.host);
  knit::pool_options o;
  o.threads = n;
  if (workers_apart) o.worker_cpus = {l.worker};
  if (policy_id == single_spinner) {
    o.spin_us = 50;
    o.max_spinners = 1;
  } else if (policy_id == old_default) {
    o.spin_us = 50 * n;
    o.park_ms = 1;
  }
  knit::pool p(o);
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  const double work_cores = 0.5 * std::min<double>(n, std::max<long>(1, cpus - 1));
  const double rate = work_cores * 1e6 / kTaskUs;  // calls per second
  const auto interval = std::chrono::nanoseconds(static_cast<long long>(1e9 / rate));
  std::uint64_t sink = 0, completed = 0, sent = 0;
  auto task = [](std::uint64_t salt) {
    return burn(knit_bench::thread_cpu_ns() + (salt & 1), kTaskUs);
  };
  auto handler = [&](knit::result<std::uint64_t> r) {
    sink += r.value();
    ++completed;
  };
  double host_cpu_ns = 0;
  std::uint64_t wakes = 0, peer_wakes = 0, calls = 0, spins = 0, spin_hits = 0;
  for (auto _ : state) {
    const auto s0 = p.stats();
    const auto c0 = knit_bench::thread_cpu_ns();
    const std::uint64_t base_sent = sent;
    const auto start = std::chrono::steady_clock::now();
    const auto end = start + std::chrono::seconds(1);
    auto next = start;
    while (std::chrono::steady_clock::now() < end) {
      auto now = std::chrono::steady_clock::now();
      while (next <= now) {
        (void)p.submit(task, sent, handler);
        ++sent;
        next += interval;
      }
      const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(
          next - std::chrono::steady_clock::now());
      timespec ts{0, std::max<long>(0, static_cast<long>(wait.count()))};
      pollfd fd{p.completion_fd(), POLLIN, 0};
      ::ppoll(&fd, 1, &ts, nullptr);
      p.drain();
    }
    while (p.pending() > 0) {
      pollfd fd{p.completion_fd(), POLLIN, 0};
      ::poll(&fd, 1, 10);
      p.drain();
    }
    host_cpu_ns += static_cast<double>(knit_bench::thread_cpu_ns() - c0);
    const auto s1 = p.stats();
    wakes += s1.host_wakes - s0.host_wakes;
    peer_wakes += s1.totals().peer_wakes - s0.totals().peer_wakes;
    spins += s1.totals().spins - s0.totals().spins;
    spin_hits += s1.totals().spin_hits - s0.totals().spin_hits;
    calls += sent - base_sent;
  }
  benchmark::DoNotOptimize(sink);
  state.counters["calls"] = static_cast<double>(calls);
  state.counters["host_cpu_us_per_call"] = host_cpu_ns / 1e3 / static_cast<double>(calls);
  state.counters["host_wakes_per_call"] = static_cast<double>(wakes) / static_cast<double>(calls);
  state.counters["peer_wakes_per_call"] =
      static_cast<double>(peer_wakes) / static_cast<double>(calls);
  state.counters["spin_hits_per_call"] =
      static_cast<double>(spin_hits) / static_cast<double>(calls);
  state.counters["spins_per_call"] = static_cast<double>(spins) / static_cast<double>(calls);
  static const char* names[] = {"default policy", "single spinner 50us",
                                "old default N*50us+park 1ms"};
  state.SetLabel(names[policy_id]);
}

// The host is pinned before the pool exists, so these workers inherit its single CPU.
void steady_load_host_cost(benchmark::State& state) { run_steady_load(state, false); }
BENCHMARK(steady_load_host_cost)
    ->ArgsProduct({{default_policy, single_spinner, old_default}, {1, 2, 4}})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// One worker on a CPU of its own: the layout where the default policy's spin may pay.
void steady_load_host_cost_worker_apart(benchmark::State& state) { run_steady_load(state, true); }
BENCHMARK(steady_load_host_cost_worker_apart)
    ->ArgsProduct({{default_policy, single_spinner}, {1}})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

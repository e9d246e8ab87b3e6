// The pool's own transport, measured against the floors in floor_benchmarks.cpp:
// an empty task's round trip with a spinning and with a parked worker, and throughput
// with 64 calls in flight. The host busy-polls (pool::poll) so the eventfd path is not
// part of these figures; steady_load_benchmarks.cpp measures the real blocking host.
#include <benchmark/benchmark.h>

#include <sched.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "bench_support.hpp"
#include "knit/pool.hpp"

namespace {

struct empty_task {
  int operator()(int x) const noexcept { return x; }
};

// ns per submit -> run -> result delivered, worker spinning the whole time.
void pool_round_trip_spinning_worker(benchmark::State& state) {
  const auto l = knit_bench::layout();
  knit_bench::pin_self(l.host);
  knit::pool_options o;
  o.threads = 1;
  o.spin_us = 1'000'000;  // a budget longer than any gap here: the worker never parks
  o.worker_cpus = {l.worker};
  knit::pool p(o);
  bool done = false;
  auto handler = [&done](knit::result<int>) { done = true; };
  for (int i = 0; i < 1000; ++i) {  // warm-up: the free list and the rings
    done = false;
    (void)p.submit(empty_task{}, i, handler);
    while (!done) p.poll();
  }
  for (auto _ : state) {
    done = false;
    (void)p.submit(empty_task{}, 1, handler);
    while (!done) p.poll();
  }
  state.counters["host_wakes_per_call"] = benchmark::Counter(
      static_cast<double>(p.stats().host_wakes) / static_cast<double>(state.iterations() + 1000));
  state.SetLabel("ns per round trip");
}
BENCHMARK(pool_round_trip_spinning_worker)->MinTime(0.5);

// The same back-to-back loop with the default idle policy (50 us spin at one worker), spin
// gate off (/0, the policy before the gate) and on (/1, the default): with host and worker
// on CPUs of their own the gate lets it spin and every spin catches the next call, so /1
// should match /0; with KNIT_MICRO_CPUS="0,0" (one CPU) the gate parks the worker instead.
void pool_round_trip_default_policy(benchmark::State& state) {
  const auto l = knit_bench::layout();
  knit_bench::pin_self(l.host);
  knit::pool_options o;
  o.threads = 1;
  o.spin_gate = state.range(0) != 0;
  o.worker_cpus = {l.worker};
  knit::pool p(o);
  bool done = false;
  auto handler = [&done](knit::result<int>) { done = true; };
  for (int i = 0; i < 1000; ++i) {
    done = false;
    (void)p.submit(empty_task{}, i, handler);
    while (!done) p.poll();
  }
  const auto s0 = p.stats();
  for (auto _ : state) {
    done = false;
    (void)p.submit(empty_task{}, 1, handler);
    while (!done) p.poll();
  }
  const auto s1 = p.stats();
  const auto calls = static_cast<double>(state.iterations());
  state.counters["host_wakes_per_call"] =
      benchmark::Counter(static_cast<double>(s1.host_wakes - s0.host_wakes) / calls);
  state.counters["spin_hits_per_call"] = benchmark::Counter(
      static_cast<double>(s1.totals().spin_hits - s0.totals().spin_hits) / calls);
  state.SetLabel(state.range(0) ? "ns per round trip, gate on" : "ns per round trip, gate off");
}
BENCHMARK(pool_round_trip_default_policy)->Arg(0)->Arg(1)->MinTime(0.5);

// A pool built by a thread pinned to its CPU and busy there (an event loop building its
// pool at start-up), its worker pinned to another: the time from the constructor's call to
// the first call's result, host busy-polling as the loop would run on. A worker thread
// that inherited the builder's CPU could take its own only once the builder was preempted;
// one started on its CPU (src/worker_thread.hpp) answers at once.
void pool_first_call_after_start(benchmark::State& state) {
  const auto l = knit_bench::layout();
  knit_bench::pin_self(l.host);
  knit::pool_options o;
  o.threads = 1;
  o.worker_cpus = {l.worker};
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    knit::pool p(o);
    bool done = false;
    (void)p.submit(empty_task{}, 1, [&done](knit::result<int>) { done = true; });
    while (!done) p.poll();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  state.SetLabel("construct + first round trip");
}
BENCHMARK(pool_first_call_after_start)
    ->UseManualTime()
    ->Iterations(50)
    ->Unit(benchmark::kMicrosecond);

// Lending from a pinned host: the pool built while its thread could use the host's and the
// worker's CPUs (no worker_cpus), then that thread pins itself to the host's CPU and polls
// as a loop would; one call holds the only worker and a quick one queues behind it. The
// time until the quick one's result (lend_after 1 ms of it), and the CPU it ran on: a lent
// worker that took its starter's mask shares the host's CPU, one with the pool's may not.
void pool_call_behind_a_held_one_lent(benchmark::State& state) {
  const auto l = knit_bench::layout();
  cpu_set_t both;
  CPU_ZERO(&both);
  CPU_SET(l.host, &both);
  CPU_SET(l.worker, &both);
  double on_host_cpu = 0;
  for (auto _ : state) {
    ::sched_setaffinity(0, sizeof both, &both);
    knit::pool_options o;
    o.threads = 1;
    o.lend_after = std::chrono::milliseconds(1);
    o.max_lent_workers = 1;
    knit::pool p(o);
    knit_bench::pin_self(l.host);
    std::atomic<bool> open{false}, entered{false};
    bool held = false, quick = false;
    (void)p.submit(
        [&](int) {
          entered = true;
          while (!open.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
          return 0;
        },
        0, [&](knit::result<int>) { held = true; });
    while (!entered.load()) p.poll();
    const auto t0 = std::chrono::steady_clock::now();
    std::atomic<int> cpu{-1};
    (void)p.submit(
        [&cpu](int) {
          cpu.store(::sched_getcpu());
          return 0;
        },
        0, [&](knit::result<int>) { quick = true; });
    while (!quick) p.poll();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    open = true;
    while (!held) p.poll();
    if (cpu.load() == l.host) ++on_host_cpu;
  }
  state.counters["ran_on_host_cpu"] =
      benchmark::Counter(on_host_cpu / static_cast<double>(state.iterations()));
  state.SetLabel("queued behind a held call, lend_after 1 ms");
}
BENCHMARK(pool_call_behind_a_held_one_lent)
    ->UseManualTime()
    ->Iterations(20)
    ->Unit(benchmark::kMicrosecond);

// µs per round trip when the worker is parked (spin 0) ~300 µs before each call, as in
// floor_futex_wake_round_trip: the wake dominates.
void pool_round_trip_parked_worker(benchmark::State& state) {
  const auto l = knit_bench::layout();
  knit_bench::pin_self(l.host);
  knit::pool_options o;
  o.threads = 1;
  o.spin_us = 0;
  o.worker_cpus = {l.worker};
  knit::pool p(o);
  bool done = false;
  auto handler = [&done](knit::result<int>) { done = true; };
  double host_cpu_ns = 0;
  for (auto _ : state) {
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    done = false;
    const auto t0 = std::chrono::steady_clock::now();
    const auto c0 = knit_bench::thread_cpu_ns();
    (void)p.submit(empty_task{}, 1, handler);
    host_cpu_ns +=
        static_cast<double>(knit_bench::thread_cpu_ns() - c0);  // submit incl. FUTEX_WAKE
    while (!done) p.poll();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const auto s = p.stats();
  state.counters["host_wakes_per_call"] = benchmark::Counter(
      static_cast<double>(s.host_wakes) / static_cast<double>(state.iterations()));
  state.counters["host_submit_cpu_us"] =
      benchmark::Counter(host_cpu_ns / 1e3 / static_cast<double>(state.iterations()));
}
BENCHMARK(pool_round_trip_parked_worker)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(400);

// Calls per second with 64 in flight, default policy, threads = range(0). Workers pinned to
// the worker CPU: unpinned, a worker can land on the host's CPU, where the busy-polling
// host starves it (measured: 20k calls/s instead of ~500k at one worker).
void pool_throughput_64_in_flight(benchmark::State& state) {
  const auto l = knit_bench::layout();
  knit_bench::pin_self(l.host);
  knit::pool_options o;
  o.threads = static_cast<unsigned>(state.range(0));
  o.worker_cpus = {l.worker};
  knit::pool p(o);
  std::int64_t in_flight = 0, completed = 0;
  auto handler = [&](knit::result<int>) {
    --in_flight;
    ++completed;
  };
  for (auto _ : state) {
    while (in_flight < 64) {
      (void)p.submit(empty_task{}, 1, handler);
      ++in_flight;
    }
    p.poll();
  }
  while (in_flight > 0) p.poll();
  state.counters["calls_per_s"] =
      benchmark::Counter(static_cast<double>(completed), benchmark::Counter::kIsRate);
  const auto s = p.stats();
  state.counters["host_wakes_per_call"] =
      benchmark::Counter(static_cast<double>(s.host_wakes) / static_cast<double>(completed));
}
BENCHMARK(pool_throughput_64_in_flight)->Arg(1)->Arg(2)->Arg(4)->MinTime(1.0)->UseRealTime();

}  // namespace

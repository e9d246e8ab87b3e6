// knit against what a C++ user would use instead, in one run with one pinning (host on the
// layout's host CPU, one worker on its worker CPU): boost::asio::thread_pool with post-back,
// oneTBB task_arena::enqueue with post-back, and a mutex + condition-variable queue. Every
// body below is a template over peer_runtime, so each runtime runs the same code.
// Benchmarks are named peer/<metric>/<runtime>, each run kRepetitions times interleaved;
// peer_table.cpp turns them into the ratio table printed at the end of knit-micro.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.hpp"
#include "peer_asio_pool.hpp"
#include "peer_knit.hpp"
#include "peer_mutex_queue.hpp"
#include "peer_runtime.hpp"
#include "peer_tbb.hpp"

namespace {

using knit_bench::peer_runtime;
using clock_type = std::chrono::steady_clock;

std::uint64_t empty_task(std::uint64_t x) { return x; }

constexpr double kSteadyTaskUs = 50.0;

// kSteadyTaskUs of the worker's own CPU (not wall time: a preempted worker still does the work).
std::uint64_t burn_task(std::uint64_t salt) {
  const std::uint64_t start = knit_bench::thread_cpu_ns();
  std::uint64_t h = start + salt;
  while (static_cast<double>(knit_bench::thread_cpu_ns() - start) < kSteadyTaskUs * 1000.0) {
    for (int i = 0; i < 64; ++i) h = h * 6364136223846793005u + 1442695040888963407u;
  }
  return h;
}

double percentile_us(std::vector<double>& ns, double q) {
  if (ns.empty()) return 0;
  const auto k = static_cast<std::size_t>(q * static_cast<double>(ns.size() - 1));
  std::nth_element(ns.begin(), ns.begin() + static_cast<std::ptrdiff_t>(k), ns.end());
  return ns[k] / 1e3;
}

template <peer_runtime R>
void warm_up(R& r, int calls) {
  int done = 0;
  for (int i = 0; i < calls; ++i) r.submit(empty_task, 1, [&done](std::uint64_t) { ++done; });
  while (done < calls) r.poll();
}

// One empty call, submitted and polled for until its reply has run: the time it took.
template <peer_runtime R>
clock_type::duration one_round_trip(R& r) {
  bool done = false;
  const auto t0 = clock_type::now();
  r.submit(empty_task, 1, [&done](std::uint64_t) { done = true; });
  while (!done) r.poll();
  return clock_type::now() - t0;
}

// Empty task, one call at a time, the host busy-polling: the transport's round trip while
// the worker has just been busy (each runtime's own spin or park policy decides the rest).
template <peer_runtime R>
void round_trip_back_to_back(benchmark::State& state) {
  const auto l = knit_bench::layout();
  knit_bench::pin_self(l.host);
  R r(1, l.worker);
  warm_up(r, 1000);
  std::vector<double> ns;
  ns.reserve(1 << 20);
  for (auto _ : state) {
    const auto elapsed = one_round_trip(r);
    if (ns.size() < ns.capacity())
      ns.push_back(std::chrono::duration<double, std::nano>(elapsed).count());
  }
  state.counters["p50_us"] = percentile_us(ns, 0.5);
  state.counters["p99_us"] = percentile_us(ns, 0.99);
}

// The same round trip after 300 µs with nothing to do: long enough for every runtime's
// worker to have parked, so the figure is its wake-up path.
template <peer_runtime R>
void round_trip_after_300us_gap(benchmark::State& state) {
  const auto l = knit_bench::layout();
  knit_bench::pin_self(l.host);
  R r(1, l.worker);
  warm_up(r, 100);
  std::vector<double> ns;
  for (auto _ : state) {
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    const auto elapsed = one_round_trip(r);
    ns.push_back(std::chrono::duration<double, std::nano>(elapsed).count());
    state.SetIterationTime(std::chrono::duration<double>(elapsed).count());
  }
  state.counters["p50_us"] = percentile_us(ns, 0.5);
  state.counters["p99_us"] = percentile_us(ns, 0.99);
}

// The host as an event loop: calls sent on a fixed schedule (kSteadyTaskUs of work each,
// 0.5 cores of work offered to the one worker), the host blocked in the runtime's wait
// between sends. The figure is the host thread's own CPU per call: what offloading costs
// the event loop; the runtime's other threads' CPU per call (the 50 µs of work, and what
// each spends idle between calls: spinning or parking) is printed beside it.
template <peer_runtime R>
void steady_stream_host_cpu(benchmark::State& state) {
  const auto l = knit_bench::layout();
  knit_bench::pin_self(l.host);
  R r(1, l.worker);
  warm_up(r, 100);
  const double rate = 0.5 * 1e6 / kSteadyTaskUs;
  const auto interval = std::chrono::nanoseconds(static_cast<long long>(1e9 / rate));
  std::uint64_t sent = 0, completed = 0, sink = 0;
  double host_cpu_ns = 0, other_cpu_ns = 0, host_switches = 0;
  auto reply = [&](std::uint64_t v) {
    sink += v;
    ++completed;
  };
  for (auto _ : state) {
    const auto c0 = knit_bench::thread_cpu_ns();
    const auto o0 = knit_bench::other_threads_cpu_ns();
    const auto s0 = knit_bench::thread_switches();
    const auto start = clock_type::now();
    const auto end = start + std::chrono::seconds(1);
    auto next = start;
    while (clock_type::now() < end) {
      for (const auto now = clock_type::now(); next <= now; next += interval)
        r.submit(burn_task, sent++, reply);
      r.wait_for(next - clock_type::now());
    }
    while (completed < sent) r.wait_for(std::chrono::milliseconds(10));
    host_cpu_ns += static_cast<double>(knit_bench::thread_cpu_ns() - c0);
    other_cpu_ns += static_cast<double>(knit_bench::other_threads_cpu_ns() - o0);
    host_switches += static_cast<double>(knit_bench::thread_switches() - s0);
  }
  benchmark::DoNotOptimize(sink);
  state.counters["calls"] = static_cast<double>(sent);
  state.counters["host_cpu_us_per_call"] = host_cpu_ns / 1e3 / static_cast<double>(sent);
  // How often the host went off its CPU a call: each a sleep and a wake the kernel paid
  // for. Named to print before host_cpu_us (micro_pairs_summary.py reads by position).
  state.counters["host_blocks_per_call"] = host_switches / static_cast<double>(sent);
  state.counters["all_other_threads_cpu_us_per_call"] =
      other_cpu_ns / 1e3 / static_cast<double>(sent);
}

// Throughput with 64 empty calls in flight, host busy-polling and topping up.
template <peer_runtime R>
void burst_64_in_flight(benchmark::State& state) {
  const auto l = knit_bench::layout();
  knit_bench::pin_self(l.host);
  R r(1, l.worker);
  warm_up(r, 1000);
  std::int64_t in_flight = 0, completed = 0;
  auto reply = [&](std::uint64_t) {
    --in_flight;
    ++completed;
  };
  for (auto _ : state) {
    for (; in_flight < 64; ++in_flight) r.submit(empty_task, 1, reply);
    r.poll();
  }
  while (in_flight > 0) r.poll();
  state.counters["calls_per_s"] =
      benchmark::Counter(static_cast<double>(completed), benchmark::Counter::kIsRate);
}

// CPU the runtime's threads burn in the 1 s right after a burst of 1000 calls, the host
// asleep: each runtime's spin-down plus whatever it does when idle, in cores. Every thread
// but the host's (asleep in sleep_for: no runtime code runs on it), each from its own CPU
// clock (not by thread name: asio's and TBB's threads have none of their own). Not
// CLOCK_PROCESS_CPUTIME_ID: it counts a worker still running at the window's start as of
// its last tick, so up to a tick of that worker's burst leaked into the window (for knit,
// in one window: 0.70-1.03 ms by the process clock, 0-0.017 ms by the worker's own clock,
// 0.10-0.18 ms the host's own reads; tid_cpu_ns in bench_support.hpp).
template <peer_runtime R>
void idle_cpu_after_work(benchmark::State& state) {
  const auto l = knit_bench::layout();
  knit_bench::pin_self(l.host);
  double cores = 0;
  for (auto _ : state) {
    R r(1, l.worker);
    warm_up(r, 1000);
    const auto t0 = clock_type::now();
    const std::uint64_t c0 = knit_bench::other_threads_cpu_ns();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const std::uint64_t c1 = knit_bench::other_threads_cpu_ns();
    const double secs = std::chrono::duration<double>(clock_type::now() - t0).count();
    cores = static_cast<double>(c1 - c0) / 1e9 / secs;
  }
  state.counters["idle_cores"] = cores;
}

// Each comparison is kRepetitions interleaved passes (knit, asio, TBB, queue, knit, ...)
// over the same few seconds of the machine's life, metric by metric: the table reports
// the median and the spread. Same-named registrations are separate runs to the library.
constexpr int kRepetitions = 3;

template <peer_runtime... R>
void register_all() {
  auto name = [](const char* metric, const char* runtime) {
    return std::string("peer/") + metric + "/" + runtime;
  };
  for (int rep = 0; rep < kRepetitions; ++rep)
    (benchmark::RegisterBenchmark(name("round_trip_back_to_back", R::name).c_str(),
                                  round_trip_back_to_back<R>)
         ->MinTime(0.3)
         ->Unit(benchmark::kMicrosecond),
     ...);
  for (int rep = 0; rep < kRepetitions; ++rep)
    (benchmark::RegisterBenchmark(name("round_trip_after_300us_gap", R::name).c_str(),
                                  round_trip_after_300us_gap<R>)
         ->UseManualTime()
         ->Iterations(400)
         ->Unit(benchmark::kMicrosecond),
     ...);
  for (int rep = 0; rep < kRepetitions; ++rep)
    (benchmark::RegisterBenchmark(name("steady_stream_host_cpu", R::name).c_str(),
                                  steady_stream_host_cpu<R>)
         ->Iterations(1)
         ->Unit(benchmark::kMillisecond),
     ...);
  for (int rep = 0; rep < kRepetitions; ++rep)
    (benchmark::RegisterBenchmark(name("burst_64_in_flight", R::name).c_str(),
                                  burst_64_in_flight<R>)
         ->MinTime(0.5)
         ->UseRealTime(),
     ...);
  for (int rep = 0; rep < kRepetitions; ++rep)
    (benchmark::RegisterBenchmark(name("idle_cpu_after_work", R::name).c_str(),
                                  idle_cpu_after_work<R>)
         ->Iterations(1)
         ->Unit(benchmark::kMillisecond),
     ...);
}

[[maybe_unused]] const bool registered = [] {
  register_all<knit_bench::knit_peer, knit_bench::asio_pool_peer, knit_bench::tbb_peer,
               knit_bench::mutex_queue_peer>();
  return true;
}();

}  // namespace

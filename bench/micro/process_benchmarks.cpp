// Process workers (knit/process.hpp) against thread workers, in the same run and the same
// layout as pool_benchmarks.cpp (host on its CPU, the worker thread and so its child on the
// worker CPU): an empty call's round trip with the worker spinning and parked, and a burst of
// 64 calls, with the host thread's CPU to submit a call (the host busy-polls for results, as
// in pool_benchmarks.cpp, so its total CPU is the wall time; knit-process-bench measures a
// host that blocks). The process rows add the worker
// thread's hop to its child and back; with the child on the worker thread's one CPU neither
// side spins (slot_bell.hpp), so the hop is two eventfd wakes. main.cpp registers the task
// ("echo") and calls knit::worker_main first: knit-micro is its own worker executable.
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>
#include <thread>

#include "bench_support.hpp"
#include "knit/pool.hpp"
#include "knit/process.hpp"

namespace {

knit::pool_options one_pinned_worker(unsigned spin_us) {
  const auto l = knit_bench::layout();
  knit::pool_options o;
  o.threads = 1;
  o.spin_us = spin_us;
  o.worker_cpus = {l.worker};
  return o;
}

// Submits one empty call of the thread task (process = 0) or of the process task (1).
template <class Handler>
void submit_one(knit::pool& p, bool process, Handler& handler) {
  const auto ec = process ? knit::submit_process(p, "echo", std::string(), handler)
                          : p.submit([](std::string in) { return in; }, std::string(), handler);
  if (ec) std::abort();
}

// ns per round trip, worker spinning between calls (1 s budget); range(0): 0 thread, 1 process.
void process_round_trip_spinning_worker(benchmark::State& state) {
  knit_bench::pin_self(knit_bench::layout().host);
  knit::pool p(one_pinned_worker(1'000'000));
  const bool process = state.range(0) != 0;
  bool done = false;
  auto handler = [&done](knit::result<std::string> r) {
    if (!r.ok()) std::abort();
    done = true;
  };
  for (int i = 0; i < 1000; ++i) {  // warm-up; the process row's child starts here
    done = false;
    submit_one(p, process, handler);
    while (!done) p.poll();
  }
  for (auto _ : state) {
    done = false;
    submit_one(p, process, handler);
    while (!done) p.poll();
  }
  state.SetLabel(process ? "process worker" : "thread worker");
}
BENCHMARK(process_round_trip_spinning_worker)->Arg(0)->Arg(1)->MinTime(0.5);

// µs per round trip with the worker parked ~300 µs before each call (spin 0).
void process_round_trip_parked_worker(benchmark::State& state) {
  knit_bench::pin_self(knit_bench::layout().host);
  knit::pool p(one_pinned_worker(0));
  const bool process = state.range(0) != 0;
  bool done = false;
  auto handler = [&done](knit::result<std::string> r) {
    if (!r.ok()) std::abort();
    done = true;
  };
  done = false;
  submit_one(p, process, handler);  // the child's start is not part of a round trip
  while (!done) p.poll();
  double host_cpu_ns = 0;
  for (auto _ : state) {
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    done = false;
    const auto t0 = std::chrono::steady_clock::now();
    const auto c0 = knit_bench::thread_cpu_ns();
    submit_one(p, process, handler);  // incl. the FUTEX_WAKE of the parked worker
    host_cpu_ns += static_cast<double>(knit_bench::thread_cpu_ns() - c0);
    while (!done) p.poll();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  state.counters["host_submit_cpu_us"] =
      benchmark::Counter(host_cpu_ns / 1e3 / static_cast<double>(state.iterations()));
  state.SetLabel(process ? "process worker" : "thread worker");
}
BENCHMARK(process_round_trip_parked_worker)
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(400);

// ns per call of a burst of 64 submitted at once and drained, default idle policy.
void process_burst_64(benchmark::State& state) {
  knit_bench::pin_self(knit_bench::layout().host);
  knit::pool p(one_pinned_worker(50));
  const bool process = state.range(0) != 0;
  int done = 0;
  auto handler = [&done](knit::result<std::string> r) {
    if (!r.ok()) std::abort();
    ++done;
  };
  double submit_cpu_ns = 0;
  auto burst = [&] {
    done = 0;
    const auto c0 = knit_bench::thread_cpu_ns();
    for (int i = 0; i < 64; ++i) submit_one(p, process, handler);
    submit_cpu_ns += static_cast<double>(knit_bench::thread_cpu_ns() - c0);
    while (done < 64) p.poll();
  };
  for (int i = 0; i < 20; ++i) burst();
  submit_cpu_ns = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) burst();
  const double calls = 64.0 * static_cast<double>(state.iterations());
  state.counters["ns_per_call"] = benchmark::Counter(
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
      calls);
  state.counters["host_submit_cpu_us"] = benchmark::Counter(submit_cpu_ns / 1e3 / calls);
  state.SetLabel(process ? "process worker" : "thread worker");
}
BENCHMARK(process_burst_64)->Arg(0)->Arg(1)->MinTime(0.5)->UseRealTime();

}  // namespace

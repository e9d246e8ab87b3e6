// Idle cost per configuration: CPU the workers burn with the pool started, warmed up and
// then handed nothing, in cores (on-CPU ns from /proc/self/task/*/schedstat over a 1 s
// window). `model` is a timed-park policy's predicted idle cost, N*spin/(spin+park), as the
// reference benchmark models it. Claims nothing about load; see steady_load_benchmarks.cpp
// for that.
#include <benchmark/benchmark.h>

#include <chrono>
#include <thread>

#include "bench_support.hpp"
#include "knit/pool.hpp"

namespace {

enum policy { default_policy = 0, old_default = 1, no_spin = 2, single_spinner = 3 };

knit::pool_options options_for(int policy_id, unsigned n) {
  knit::pool_options o;
  o.threads = n;
  switch (policy_id) {
    case default_policy: break;  // library default: 50 µs at N=1, 0 above, park until woken
    case old_default:
      o.spin_us = 50 * n;
      o.park_ms = 1;
      break;
    case no_spin: o.spin_us = 0; break;
    case single_spinner:
      o.spin_us = 50;
      o.max_spinners = 1;
      break;
  }
  return o;
}

void idle_cores(benchmark::State& state) {
  const int policy_id = static_cast<int>(state.range(0));
  const unsigned n = static_cast<unsigned>(state.range(1));
  const knit::pool_options o = options_for(policy_id, n);
  double cores = 0;
  for (auto _ : state) {
    knit::pool p(o);
    int done = 0;
    for (int i = 0; i < 1000; ++i)
      (void)p.submit([](int x) { return x; }, i, [&](knit::result<int>) { ++done; });
    while (done < 1000) p.poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // past any spin budget
    const auto wakes0 = p.stats().totals();
    const std::uint64_t c0 = knit_bench::threads_cpu_ns("knit-worker");
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const std::uint64_t c1 = knit_bench::threads_cpu_ns("knit-worker");
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto wakes1 = p.stats().totals();
    cores = static_cast<double>(c1 - c0) / 1e9 / secs;
    state.counters["wakes_per_s"] =
        static_cast<double>((wakes1.wakes_timeout + wakes1.wakes_doorbell) -
                            (wakes0.wakes_timeout + wakes0.wakes_doorbell)) /
        secs;
  }
  const double spin = o.effective_spin_us(), park = o.park_ms * 1000.0;
  state.counters["idle_cores"] = cores;
  state.counters["model"] = park > 0 ? n * spin / (spin + park) : 0.0;
  static const char* names[] = {"default policy", "old default N*50us+park 1ms", "no spin",
                                "single spinner 50us"};
  state.SetLabel(names[policy_id]);
}
BENCHMARK(idle_cores)
    ->ArgsProduct({{default_policy, old_default, no_spin, single_spinner}, {1, 2, 4, 8, 15}})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

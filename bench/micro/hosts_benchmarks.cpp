// Many hosts at once: H host threads, each its own event loop, submitting empty calls to
// one shared set of W workers, 64 in flight per host, each host blocking in its runtime's
// wait while its window is full. Rows hosts/<H>x<W>/<runtime> for the runtimes of
// hosts_runtimes.hpp (knit, asio_pool, tbb_arena). Counters: calls_per_s (all hosts
// together) and host_cpu_ns_per_call (the host threads' own CPU per call). Not pinned:
// whatever cores the machine has.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.hpp"
#include "hosts_runtimes.hpp"

namespace {

using knit_bench::asio_hosts;
using knit_bench::knit_hosts;
using knit_bench::tbb_hosts;

constexpr int kCallsPerHost = 20'000;
constexpr int kWindow = 64;

std::uint64_t empty_task(std::uint64_t x) { return x; }

template <class Shared>
void hosts_submitting_at_once(benchmark::State& state) {
  const auto hosts = static_cast<unsigned>(state.range(0));
  const auto workers = static_cast<unsigned>(state.range(1));
  Shared shared(workers);
  std::uint64_t host_cpu_ns = 0, calls = 0;
  double seconds = 0;
  for (auto _ : state) {
    std::atomic<unsigned> ready{0};
    std::atomic<bool> go{false};
    std::atomic<std::uint64_t> cpu{0};
    std::vector<std::thread> threads;
    for (unsigned h = 0; h < hosts; ++h) {
      threads.emplace_back([&] {
        typename Shared::host host(shared);
        ++ready;
        while (!go.load()) std::this_thread::yield();
        const std::uint64_t cpu0 = knit_bench::thread_cpu_ns();
        int sent = 0, done = 0;
        while (done < kCallsPerHost) {
          while (sent < kCallsPerHost && sent - done < kWindow) {
            host.submit(empty_task, 1, [&done] { ++done; });
            ++sent;
          }
          host.wait();
        }
        cpu += knit_bench::thread_cpu_ns() - cpu0;
      });
    }
    while (ready.load() < hosts) std::this_thread::yield();
    const auto t0 = std::chrono::steady_clock::now();
    go = true;
    for (auto& t : threads) t.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    seconds += s;
    host_cpu_ns += cpu.load();
    calls += static_cast<std::uint64_t>(hosts) * kCallsPerHost;
  }
  state.counters["calls_per_s"] = static_cast<double>(calls) / seconds;
  state.counters["host_cpu_ns_per_call"] =
      static_cast<double>(host_cpu_ns) / static_cast<double>(calls);
}

template <class... Shared>
void register_hosts() {
  for (const int h : {1, 2, 4}) {
    for (const int w : {1, 2}) {
      (benchmark::RegisterBenchmark(
           ("hosts/" + std::to_string(h) + "x" + std::to_string(w) + "/" + Shared::name).c_str(),
           hosts_submitting_at_once<Shared>)
           ->Args({h, w})
           ->UseManualTime()
           ->Iterations(3)
           ->Unit(benchmark::kMillisecond),
       ...);
    }
  }
}

[[maybe_unused]] const bool registered = [] {
  register_hosts<knit_hosts, asio_hosts, tbb_hosts>();
  return true;
}();

}  // namespace

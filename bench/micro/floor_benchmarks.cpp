// Physical floors the pool is measured against: a cache line bounced between two pinned
// threads (~125-161 ns on the 2-vCPU VMs this was built on), and a raw futex wake of a
// parked thread (12-47 µs until it runs, 10-16 µs of the waker's CPU there). They claim nothing
// about knit; they are the denominators of its figures.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench_support.hpp"

namespace {

// The raw futex calls this floor measures, made here rather than through the library's
// private wrapper (src/futex.hpp): a benchmark sees only knit's public headers. The
// sleeper re-checks the word after every return, so EINTR and spurious wakes are harmless.
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected) noexcept {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected,
            nullptr, nullptr, 0);
}

void futex_wake(std::atomic<std::uint32_t>& word) noexcept {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 1, nullptr,
            nullptr, 0);
}

// ns per round trip through one shared cache line, both threads spinning.
void floor_cache_line_ping_pong(benchmark::State& state) {
  const auto l = knit_bench::layout();
  alignas(64) std::atomic<std::uint64_t> line{0};
  std::atomic<bool> stop{false};
  std::thread peer([&] {
    knit_bench::pin_self(l.worker);
    std::uint64_t seen = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const std::uint64_t v = line.load(std::memory_order_acquire);
      if (v != seen && (v & 1)) {
        line.store(v + 1, std::memory_order_release);
        seen = v + 1;
      }
    }
  });
  knit_bench::pin_self(l.host);
  std::uint64_t v = 0;
  for (auto _ : state) {
    line.store(++v, std::memory_order_release);  // odd: ping
    while (line.load(std::memory_order_acquire) != v + 1) {
    }
    ++v;  // even: pong received
  }
  stop = true;
  peer.join();
  state.SetLabel("ns per round trip");
}
BENCHMARK(floor_cache_line_ping_pong)->MinTime(0.5);

// µs from FUTEX_WAKE to the parked thread running (its reply seen by the spinning waker),
// after the thread has been parked ~300 µs; plus the waker's own CPU inside FUTEX_WAKE.
void floor_futex_wake_round_trip(benchmark::State& state) {
  const auto l = knit_bench::layout();
  std::atomic<std::uint32_t> word{0};  // 0 = sleep, 1 = go
  std::atomic<std::uint32_t> reply{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> parked{false};
  std::thread sleeper([&] {
    knit_bench::pin_self(l.worker);
    while (!stop.load()) {
      parked.store(true);
      while (word.load() == 0 && !stop.load()) futex_wait(word, 0);
      word.store(0);
      reply.fetch_add(1, std::memory_order_release);
    }
  });
  knit_bench::pin_self(l.host);
  double waker_cpu_ns = 0;
  std::uint32_t expected = 0;
  for (auto _ : state) {
    while (!parked.load()) {
    }
    std::this_thread::sleep_for(
        std::chrono::microseconds(300));  // let it reach FUTEX_WAIT and its CPU halt
    parked.store(false);
    const auto t0 = std::chrono::steady_clock::now();
    const auto c0 = knit_bench::thread_cpu_ns();
    word.store(1);
    futex_wake(word);
    waker_cpu_ns += static_cast<double>(knit_bench::thread_cpu_ns() - c0);
    ++expected;
    while (reply.load(std::memory_order_acquire) != expected) {
    }
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  stop = true;
  word.store(1);
  futex_wake(word);
  sleeper.join();
  state.counters["waker_cpu_us"] =
      benchmark::Counter(waker_cpu_ns / 1e3 / static_cast<double>(state.iterations()));
}
BENCHMARK(floor_futex_wake_round_trip)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(400);

}  // namespace

// One host's latency while another host floods the same workers. A victim host thread sends
// one call at a time (a task burning kTaskUs of worker CPU) and times each round trip, from
// its submit to its reply on its own thread; in the flooded variant a second host thread
// keeps kFloodPerWorker x W of the same tasks queued on the same W workers the whole time,
// sending a new one for each reply. Rows hosts_flood/<W>/<runtime>/{alone,flooded} for the
// runtimes of hosts_runtimes.hpp: knit (two attached hosts, workers taking turns between
// their rings), asio_pool (the flooder posts into the same asio::thread_pool, one FIFO)
// and tbb_arena (the same task_arena). Counters: the victim's p50_us, p99_us and
// calls_per_s; wait_p99_us, the p99 of the victim's queue wait alone (submit to its task
// starting on a worker: the rest of a round trip is the task, the reply and the victim's
// wake-up); the flood's flood_calls_per_s over the same time; and victim_calls (at most
// kVictimCalls, fewer when a row reaches kVictimTime first, so a row behind a FIFO flood
// still ends in about two seconds). Not pinned: run it under taskset.
#include <benchmark/benchmark.h>

#include <algorithm>
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

constexpr double kTaskUs = 20.0;
constexpr int kVictimCalls = 2'000;
constexpr auto kVictimTime = std::chrono::milliseconds(2'000);
// Queued flood work: 256 x 20 µs = 5 ms per worker, so the queue stays full through the
// flooder's own scheduling gaps (with 64 a worker, 1.3 ms, a flooder preempted on a loaded
// 2-CPU machine let the queue run dry and the victim's calls slip through, bunched in those
// gaps); well inside knit's ring (1024 slots). A FIFO queue puts the victim behind it all.
constexpr int kFloodPerWorker = 256;

// Burns kTaskUs of the worker's own CPU (not wall time: a preempted task still does its
// whole share of work, as a real one would).
std::uint64_t spin_task(std::uint64_t salt) {
  const std::uint64_t start = knit_bench::thread_cpu_ns();
  std::uint64_t h = salt;
  while (static_cast<double>(knit_bench::thread_cpu_ns() - start) < kTaskUs * 1000.0) {
    for (int i = 0; i < 64; ++i) h = h * 6364136223846793005u + 1442695040888963407u;
  }
  return h;
}

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// How long the victim's call waited before a worker started it, written by that worker and
// read by the victim in its reply (one victim call at a time, so one slot is enough; the
// runtime's hand-back of the result orders the store before the reply).
std::atomic<std::int64_t> victim_queue_wait_ns{0};

// The victim's task: spin_task, after noting how long it waited since `sent_at_ns`.
std::uint64_t victim_task(std::uint64_t sent_at_ns) {
  victim_queue_wait_ns.store(steady_ns() - static_cast<std::int64_t>(sent_at_ns),
                             std::memory_order_release);
  return spin_task(sent_at_ns);
}

double percentile_us(std::vector<double>& ns, double q) {
  if (ns.empty()) return 0;
  const auto k = static_cast<std::size_t>(q * static_cast<double>(ns.size() - 1));
  std::nth_element(ns.begin(), ns.begin() + static_cast<std::ptrdiff_t>(k), ns.end());
  return ns[k] / 1e3;
}

// The flooding host: keeps `window` calls outstanding until `stop`, then waits for every
// reply (asio's and tbb's replies are posted to this host's io_context, which must outlive
// them). `full` turns true once the first window is queued; `done` is published after each
// wait so the victim can count the flood's rate over its own interval.
template <class Shared>
void flood_until_stopped(Shared& shared, int window, std::atomic<bool>& full,
                         const std::atomic<bool>& stop, std::atomic<std::uint64_t>& done_out) {
  typename Shared::host host(shared);
  std::uint64_t sent = 0, done = 0;
  while (!stop.load(std::memory_order_relaxed)) {
    while (sent - done < static_cast<std::uint64_t>(window)) {
      host.submit(spin_task, sent, [&done] { ++done; });
      ++sent;
    }
    full.store(true, std::memory_order_release);
    host.wait();
    done_out.store(done, std::memory_order_relaxed);
  }
  while (done < sent) host.wait();
}

template <class Shared>
void victim_round_trips(benchmark::State& state, bool flooded) {
  const auto workers = static_cast<unsigned>(state.range(0));
  Shared shared(workers);
  std::vector<double> round_trip_ns, queue_wait_ns;
  round_trip_ns.reserve(kVictimCalls);
  queue_wait_ns.reserve(kVictimCalls);
  std::uint64_t flood_calls = 0;
  double seconds = 0;
  for (auto _ : state) {
    std::atomic<bool> flood_full{!flooded}, stop{false};
    std::atomic<std::uint64_t> flood_done{0};
    std::thread flooder;
    if (flooded) {
      flooder = std::thread([&] {
        flood_until_stopped(shared, kFloodPerWorker * static_cast<int>(workers), flood_full, stop,
                            flood_done);
      });
    }
    std::thread victim([&] {
      typename Shared::host host(shared);
      while (!flood_full.load(std::memory_order_acquire)) std::this_thread::yield();
      const std::uint64_t flood0 = flood_done.load(std::memory_order_relaxed);
      const auto t0 = std::chrono::steady_clock::now();
      const auto end = t0 + kVictimTime;
      for (int i = 0; i < kVictimCalls && std::chrono::steady_clock::now() < end; ++i) {
        bool back = false;
        const auto sent_at = std::chrono::steady_clock::now();
        host.submit(victim_task, static_cast<std::uint64_t>(steady_ns()), [&] {
          queue_wait_ns.push_back(
              static_cast<double>(victim_queue_wait_ns.load(std::memory_order_acquire)));
          round_trip_ns.push_back(
              std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - sent_at)
                  .count());
          back = true;
        });
        while (!back) host.wait();
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      state.SetIterationTime(s);
      seconds += s;
      flood_calls += flood_done.load(std::memory_order_relaxed) - flood0;
    });
    victim.join();
    stop.store(true, std::memory_order_relaxed);
    if (flooder.joinable()) flooder.join();
  }
  const auto calls = static_cast<double>(round_trip_ns.size());
  state.counters["victim_calls"] = calls;
  state.counters["calls_per_s"] = calls / seconds;
  state.counters["flood_calls_per_s"] = static_cast<double>(flood_calls) / seconds;
  state.counters["p50_us"] = percentile_us(round_trip_ns, 0.5);
  state.counters["p99_us"] = percentile_us(round_trip_ns, 0.99);
  state.counters["wait_p99_us"] = percentile_us(queue_wait_ns, 0.99);
}

template <class... Shared>
void register_flood() {
  for (const int w : {1, 2}) {
    for (const bool flooded : {false, true}) {
      (benchmark::RegisterBenchmark(("hosts_flood/" + std::to_string(w) + "/" + Shared::name +
                                     (flooded ? "/flooded" : "/alone"))
                                        .c_str(),
                                    victim_round_trips<Shared>, flooded)
           ->Arg(w)
           ->UseManualTime()
           ->Iterations(1)
           ->Unit(benchmark::kMillisecond),
       ...);
    }
  }
}

[[maybe_unused]] const bool registered = [] {
  register_flood<knit_hosts, asio_hosts, tbb_hosts>();
  return true;
}();

}  // namespace

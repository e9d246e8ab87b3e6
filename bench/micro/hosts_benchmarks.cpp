// Many hosts at once: H host threads, each its own event loop, submitting empty calls to
// one shared set of W workers, 64 in flight per host, each host blocking in its runtime's
// wait while its window is full. Rows hosts/<H>x<W>/<runtime> for knit (H attached
// knit::pool_host on one pool), asio_pool (H io_contexts sharing one asio::thread_pool,
// each reply posted back to the loop that asked) and tbb_arena (one task_arena, replies
// posted back the same way). Counters: calls_per_s (all hosts together) and
// host_cpu_ns_per_call (the host threads' own CPU per call). Not pinned: whatever cores
// the machine has.
#include <benchmark/benchmark.h>
#include <oneapi/tbb/task_arena.h>
#include <poll.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.hpp"
#include "knit/pool.hpp"
#include "knit/pool_host.hpp"

namespace {

constexpr int kCallsPerHost = 20'000;
constexpr int kWindow = 64;

std::uint64_t empty_task(std::uint64_t x) { return x; }

// One knit pool; each host thread attaches its own pool_host.
struct knit_hosts {
  static constexpr const char* name = "knit";
  explicit knit_hosts(unsigned workers) : pool(options(workers)) {}
  static knit::pool_options options(unsigned workers) {
    knit::pool_options o;
    o.threads = workers;
    return o;
  }
  struct host {
    explicit host(knit_hosts& s) : h(s.pool) {}
    template <class Reply>
    void submit(Reply reply) {
      (void)h.submit(empty_task, std::uint64_t{1},
                     [reply](knit::result<std::uint64_t>) mutable { reply(); });
    }
    void wait() {
      if (h.poll() > 0) return;
      pollfd fd{h.completion_fd(), POLLIN, 0};
      ::poll(&fd, 1, 1);
      h.drain();
    }
    knit::pool_host h;
  };
  knit::pool pool;
};

// One asio::thread_pool; each host thread runs its own io_context.
struct asio_hosts {
  static constexpr const char* name = "asio_pool";
  explicit asio_hosts(unsigned workers) : pool(workers) {}
  struct host {
    explicit host(asio_hosts& s) : shared(s) {}
    template <class Reply>
    void submit(Reply reply) {
      boost::asio::post(shared.pool, [this, reply] {
        const std::uint64_t v = empty_task(1);
        boost::asio::post(io, [reply, v]() mutable {
          benchmark::DoNotOptimize(v);
          reply();
        });
      });
    }
    void wait() {
      if (io.poll() > 0) return;
      io.run_one_for(std::chrono::milliseconds(1));
    }
    asio_hosts& shared;
    boost::asio::io_context io;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard{
        io.get_executor()};
  };
  boost::asio::thread_pool pool;
};

// One tbb::task_arena; each host thread runs its own io_context for the replies.
struct tbb_hosts {
  static constexpr const char* name = "tbb_arena";
  explicit tbb_hosts(unsigned workers) : arena(static_cast<int>(workers), 0) {}
  struct host {
    explicit host(tbb_hosts& s) : shared(s) {}
    template <class Reply>
    void submit(Reply reply) {
      shared.arena.enqueue([this, reply] {
        const std::uint64_t v = empty_task(1);
        boost::asio::post(io, [reply, v]() mutable {
          benchmark::DoNotOptimize(v);
          reply();
        });
      });
    }
    void wait() {
      if (io.poll() > 0) return;
      io.run_one_for(std::chrono::milliseconds(1));
    }
    tbb_hosts& shared;
    boost::asio::io_context io;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard{
        io.get_executor()};
  };
  tbb::task_arena arena;
};

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
            host.submit([&done] { ++done; });
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

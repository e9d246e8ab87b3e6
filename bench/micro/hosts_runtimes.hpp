// The three runtimes the many-hosts benchmarks compare, each as a `Shared` (W workers, built
// by the benchmark thread) and a `Shared::host` (built on each host thread, its own event
// loop): knit (attached knit::pool_host on one pool), asio_pool (an io_context per host
// sharing one asio::thread_pool, each reply posted back to the loop that asked) and
// tbb_arena (one task_arena, replies posted back the same way). host::submit(task, arg,
// reply) runs task(arg) on a worker and reply() on the host's thread; host::wait() runs
// what is ready, or blocks up to 1 ms in the runtime's own wait.
#pragma once

#include <benchmark/benchmark.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <poll.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <cstdint>
#include <thread>

#include "knit/pool.hpp"
#include "knit/pool_host.hpp"

namespace knit_bench {

// A plain function pointer, so every runtime carries the same task the same way.
using host_task = std::uint64_t (*)(std::uint64_t);

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
    void submit(host_task task, std::uint64_t arg, Reply reply) {
      (void)h.submit(task, arg, [reply](knit::result<std::uint64_t>) mutable { reply(); });
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

// A host's own io_context for the peers' replies. A worker posts the reply and is still
// inside post() (signalling the io_context's condition variable) when the reply may already
// have run, so the host must not destroy the io_context until every worker has returned
// from post(): `posting` counts them, and the destructor waits for zero (a use after free
// that ThreadSanitizer reported on the host's last reply).
struct reply_loop {
  reply_loop() = default;
  reply_loop(const reply_loop&) = delete;
  reply_loop& operator=(const reply_loop&) = delete;
  ~reply_loop() {
    while (posting.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  }
  // On a worker: runs reply() on the host's thread, in its wait().
  template <class Reply>
  void post_back(Reply reply, std::uint64_t v) {
    posting.fetch_add(1, std::memory_order_relaxed);
    boost::asio::post(io, [reply, v]() mutable {
      benchmark::DoNotOptimize(v);
      reply();
    });
    // The worker's last touch of this host (partner: the destructor's acquire load).
    posting.fetch_sub(1, std::memory_order_release);
  }
  void wait() {
    if (io.poll() > 0) return;
    io.run_one_for(std::chrono::milliseconds(1));
  }
  std::atomic<unsigned> posting{0};
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard{io.get_executor()};
};

// One asio::thread_pool; each host thread runs its own io_context.
struct asio_hosts {
  static constexpr const char* name = "asio_pool";
  explicit asio_hosts(unsigned workers) : pool(workers) {}
  struct host {
    explicit host(asio_hosts& s) : shared(s) {}
    template <class Reply>
    void submit(host_task task, std::uint64_t arg, Reply reply) {
      boost::asio::post(shared.pool,
                        [this, task, arg, reply] { loop.post_back(reply, task(arg)); });
    }
    void wait() { loop.wait(); }
    asio_hosts& shared;
    reply_loop loop;
  };
  boost::asio::thread_pool pool;
};

// One tbb::task_arena; each host thread runs its own io_context for the replies.
struct tbb_hosts {
  static constexpr const char* name = "tbb_arena";
  explicit tbb_hosts(unsigned workers)
      : allow(tbb::global_control::max_allowed_parallelism, workers + 1),
        arena(static_cast<int>(workers), 0) {}
  struct host {
    explicit host(tbb_hosts& s) : shared(s) {}
    template <class Reply>
    void submit(host_task task, std::uint64_t arg, Reply reply) {
      shared.arena.enqueue([this, task, arg, reply] { loop.post_back(reply, task(arg)); });
    }
    void wait() { loop.wait(); }
    tbb_hosts& shared;
    reply_loop loop;
  };
  // TBB caps its workers at the CPUs it may use minus one (one worker under a 2-CPU mask,
  // with a warning); this lets the arena have all W, as the other runtimes do.
  tbb::global_control allow;
  tbb::task_arena arena;
};

}  // namespace knit_bench

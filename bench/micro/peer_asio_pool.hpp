// boost::asio::thread_pool with post-back as a peer_runtime (peer_runtime.hpp): what a
// Beast/Asio user writes to move work off the event loop, `post(pool, work)` and, inside
// it, `post(io, reply)` to the host's io_context, which the host runs (poll() / run_one_for()).
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <chrono>
#include <cstdint>
#include <latch>
#include <utility>

#include "bench_support.hpp"
#include "peer_runtime.hpp"

namespace knit_bench {

class asio_pool_peer {
 public:
  static constexpr const char* name = "asio_pool";

  asio_pool_peer(unsigned threads, int worker_cpu) : pool_(threads) {
    // One pinning job per pool thread; the latch holds each thread in its job until every
    // thread has taken one, so no thread runs two and none is left unpinned.
    std::latch all_pinned(threads);
    for (unsigned i = 0; i < threads; ++i) {
      boost::asio::post(pool_, [&all_pinned, worker_cpu] {
        pin_self(worker_cpu);
        all_pinned.arrive_and_wait();
      });
    }
    all_pinned.wait();
  }

  template <class Reply>
  void submit(task_fn task, std::uint64_t arg, Reply reply) {
    boost::asio::post(pool_, [this, task, arg, reply = std::move(reply)]() mutable {
      const std::uint64_t value = task(arg);
      boost::asio::post(io_, [reply = std::move(reply), value]() mutable { reply(value); });
    });
  }

  std::size_t poll() { return io_.poll(); }

  std::size_t wait_for(std::chrono::nanoseconds timeout) {
    const std::size_t ran = io_.run_one_for(timeout);
    return ran + io_.poll();
  }

 private:
  boost::asio::io_context io_;
  // Keeps run_one_for() waiting when no reply is queued yet, instead of returning at once.
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> keep_running_{
      io_.get_executor()};
  // Declared last, destroyed first: its threads are joined before io_ goes away.
  boost::asio::thread_pool pool_;
};

static_assert(peer_runtime<asio_pool_peer>);

}  // namespace knit_bench

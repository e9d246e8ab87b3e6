// oneTBB as a peer_runtime (peer_runtime.hpp): `tbb::task_arena::enqueue` (fire-and-forget
// work on TBB's worker threads) with the result posted back to the host's io_context, as a
// TBB user with an Asio event loop would write it. Workers entering the arena are pinned by
// a task_scheduler_observer.
#pragma once

#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_scheduler_observer.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <cstdint>
#include <utility>

#include "bench_support.hpp"
#include "peer_runtime.hpp"

namespace knit_bench {

class tbb_peer {
 public:
  static constexpr const char* name = "tbb_arena";

  // reserved_for_masters = 0: every slot goes to TBB workers, none to the host, which only
  // enqueues and never joins the arena.
  tbb_peer(unsigned threads, int worker_cpu)
      : arena_(static_cast<int>(threads), 0), pinner_(arena_, worker_cpu) {}

  template <class Reply>
  void submit(task_fn task, std::uint64_t arg, Reply reply) {
    // enqueue() runs its functor as const: the reply is copied into the post-back.
    arena_.enqueue([this, task, arg, reply = std::move(reply)] {
      const std::uint64_t value = task(arg);
      boost::asio::post(io_, [reply, value]() mutable { reply(value); });
    });
  }

  std::size_t poll() { return io_.poll(); }

  std::size_t wait_for(std::chrono::nanoseconds timeout) {
    const std::size_t ran = io_.run_one_for(timeout);
    return ran + io_.poll();
  }

 private:
  class pinner : public tbb::task_scheduler_observer {
   public:
    pinner(tbb::task_arena& arena, int cpu) : tbb::task_scheduler_observer(arena), cpu_(cpu) {
      observe(true);
    }
    // Stop callbacks before this object's members go; the base destructor is too late.
    ~pinner() override { observe(false); }
    void on_scheduler_entry(bool is_worker) override {
      if (is_worker) pin_self(cpu_);
    }

   private:
    int cpu_;
  };

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> keep_running_{
      io_.get_executor()};
  tbb::task_arena arena_;
  pinner pinner_;
};

static_assert(peer_runtime<tbb_peer>);

}  // namespace knit_bench

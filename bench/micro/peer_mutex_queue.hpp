// A plain mutex + condition-variable work queue as a peer_runtime (peer_runtime.hpp): the
// pool a C++ developer writes by hand. N workers sleep on a condition variable; finished
// replies go onto a mutex-guarded completion list, and an eventfd tells the host's event
// loop there is something on it.
//
// Completion protocol (why no reply is ever stranded): a worker writes the eventfd only
// when it pushes onto an EMPTY list; the host's blocking wait first clears the eventfd and
// only then takes the list. A push that lands after the take finds the list empty and
// signals again; a push between the clear and the take is taken. poll() takes the list
// without clearing: at worst the eventfd stays readable and the next wait returns early.
#pragma once

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "bench_support.hpp"
#include "peer_runtime.hpp"

namespace knit_bench {

class mutex_queue_peer {
 public:
  static constexpr const char* name = "mutex_queue";

  mutex_queue_peer(unsigned threads, int worker_cpu)
      : done_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    for (unsigned i = 0; i < threads; ++i) {
      workers_.emplace_back([this, worker_cpu] {
        pin_self(worker_cpu);
        work();
      });
    }
  }

  ~mutex_queue_peer() {
    {
      std::lock_guard lock(jobs_mutex_);
      stopping_ = true;
    }
    jobs_ready_.notify_all();
    for (auto& t : workers_) t.join();
    ::close(done_fd_);
  }

  mutex_queue_peer(const mutex_queue_peer&) = delete;
  mutex_queue_peer& operator=(const mutex_queue_peer&) = delete;

  template <class Reply>
  void submit(task_fn task, std::uint64_t arg, Reply reply) {
    {
      std::lock_guard lock(jobs_mutex_);
      jobs_.emplace_back([this, task, arg, reply = std::move(reply)]() mutable {
        const std::uint64_t value = task(arg);
        complete([reply = std::move(reply), value]() mutable { reply(value); });
      });
    }
    jobs_ready_.notify_one();
  }

  std::size_t poll() { return run_done(); }

  std::size_t wait_for(std::chrono::nanoseconds timeout) {
    const auto ns = timeout.count() > 0 ? timeout.count() : 0;
    timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    pollfd fd{done_fd_, POLLIN, 0};
    if (::ppoll(&fd, 1, &ts, nullptr) > 0) {
      std::uint64_t count = 0;
      (void)::read(done_fd_, &count, sizeof count);  // clear first, then take the list
    }
    return run_done();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(jobs_mutex_);
        jobs_ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;  // stopping, and nothing left
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  void complete(std::function<void()> reply) {
    bool was_empty;
    {
      std::lock_guard lock(done_mutex_);
      was_empty = done_.empty();
      done_.push_back(std::move(reply));
    }
    if (was_empty) {
      const std::uint64_t one = 1;
      (void)::write(done_fd_, &one, sizeof one);
    }
  }

  std::size_t run_done() {
    {
      std::lock_guard lock(done_mutex_);
      taken_.swap(done_);
    }
    const std::size_t n = taken_.size();
    for (auto& reply : taken_) reply();
    taken_.clear();
    return n;
  }

  std::mutex jobs_mutex_;
  std::condition_variable jobs_ready_;
  std::deque<std::function<void()>> jobs_;  // guarded by jobs_mutex_
  bool stopping_ = false;                   // guarded by jobs_mutex_

  std::mutex done_mutex_;
  std::vector<std::function<void()>> done_;   // guarded by done_mutex_
  std::vector<std::function<void()>> taken_;  // host thread only
  int done_fd_;

  std::vector<std::thread> workers_;  // last: started after everything they touch exists
};

static_assert(peer_runtime<mutex_queue_peer>);

}  // namespace knit_bench

// knit as a peer_runtime (peer_runtime.hpp): a knit::pool with its workers pinned to one
// CPU, the library's default idle policy, the host waiting on completion_fd() as knit-server's
// io_uring loop does: a watch that fires on every write (an epoll set holding it
// edge-triggered here, where the server polls it multishot), draining with
// completion_watch::each_write when it fired (no read of the eventfd), polling when the wait
// timed out.
#pragma once

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "knit/pool.hpp"
#include "peer_runtime.hpp"

namespace knit_bench {

class knit_peer {
 public:
  static constexpr const char* name = "knit";

  knit_peer(unsigned threads, int worker_cpu)
      : pool_(options(threads, worker_cpu)), watch_(::epoll_create1(EPOLL_CLOEXEC)) {
    epoll_event each_write{};
    each_write.events = EPOLLIN | EPOLLET;
    if (watch_ < 0 || ::epoll_ctl(watch_, EPOLL_CTL_ADD, pool_.completion_fd(), &each_write) != 0) {
      throw std::system_error(errno, std::generic_category(), "knit_peer: epoll");
    }
    // As knit::asio_host does with wake_at_turn_end: the checks after each submit wait for
    // the turn's end (the flush before the wait, or the drain).
    if (!pool_.hold_wakes(true)) throw std::logic_error("knit_peer: checks not held");
  }
  ~knit_peer() { ::close(watch_); }
  knit_peer(const knit_peer&) = delete;
  knit_peer& operator=(const knit_peer&) = delete;

  template <class Reply>
  void submit(task_fn task, std::uint64_t arg, Reply reply) {
    (void)pool_.submit(
        task, arg,
        [reply = std::move(reply)](knit::result<std::uint64_t> r) mutable { reply(r.value()); });
  }

  std::size_t poll() { return pool_.poll(); }

  std::size_t wait_for(std::chrono::nanoseconds timeout) {
    const auto ns = timeout.count() > 0 ? timeout.count() : 0;
    timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    // As an event loop does (knit::asio_host drains when its watch fires): drain and reset
    // the doorbell when it fired; a wait that timed out only polls.
    pool_.flush_wakes();  // before it sleeps, as a loop that holds its checks must
    epoll_event fired{};
    if (::epoll_pwait2(watch_, &fired, 1, &ts, nullptr) > 0) {
      return pool_.drain(knit::completion_watch::each_write);
    }
    return pool_.poll();
  }

 private:
  static knit::pool_options options(unsigned threads, int worker_cpu) {
    knit::pool_options o;
    o.threads = threads;
    o.worker_cpus = {worker_cpu};
    o.wake_at_turn_end = true;
    return o;
  }

  knit::pool pool_;
  int watch_;  // epoll set holding completion_fd() edge-triggered
};

static_assert(peer_runtime<knit_peer>);

}  // namespace knit_bench

// knit as a peer_runtime (peer_runtime.hpp): a knit::pool with its workers pinned to one
// CPU, the library's default idle policy, the host waiting on completion_fd() as an event
// loop would (draining when it fired, polling when the wait timed out).
#pragma once

#include <poll.h>

#include <chrono>
#include <cstdint>
#include <utility>

#include "knit/pool.hpp"
#include "peer_runtime.hpp"

namespace knit_bench {

class knit_peer {
 public:
  static constexpr const char* name = "knit";

  knit_peer(unsigned threads, int worker_cpu) : pool_(options(threads, worker_cpu)) {}

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
    pollfd fd{pool_.completion_fd(), POLLIN, 0};
    // As an event loop does (knit::asio_host drains when its watch reports the fd): drain
    // and reset the doorbell when it fired; a wait that timed out reads no eventfd (it
    // would fail with EAGAIN) and only polls.
    if (::ppoll(&fd, 1, &ts, nullptr) > 0 && (fd.revents & POLLIN) != 0) return pool_.drain();
    return pool_.poll();
  }

 private:
  static knit::pool_options options(unsigned threads, int worker_cpu) {
    knit::pool_options o;
    o.threads = threads;
    o.worker_cpus = {worker_cpu};
    return o;
  }

  knit::pool pool_;
};

static_assert(peer_runtime<knit_peer>);

}  // namespace knit_bench

// host_thread: a thread that attaches to a pool as one more host (knit::pool_host) and runs
// the test's body on it, then leaves; for the many-hosts tests.
#pragma once

#include <poll.h>

#include <chrono>
#include <functional>
#include <thread>

#include "knit/pool.hpp"
#include "knit/pool_host.hpp"

namespace knit_test {

// Drains `h` (waiting on its eventfd, 10 ms at a time so deadlines fire) until done() or
// `limit` passes. Returns done().
inline bool drain_host_until(knit::pool_host& h, const std::function<bool()>& done,
                             std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    pollfd fd{h.completion_fd(), POLLIN, 0};
    ::poll(&fd, 1, 10);
    h.drain();
  }
  return true;
}

// Runs body(host) on a new thread attached to `p`; join() waits for it to leave.
class host_thread {
 public:
  host_thread(knit::pool& p, std::function<void(knit::pool_host&)> body)
      : thread_([&p, body = std::move(body)] {
          knit::pool_host host(p);
          body(host);
        }) {}
  ~host_thread() { join(); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::thread thread_;
};

}  // namespace knit_test

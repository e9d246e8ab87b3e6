// Test helpers: run a pool's host side until a condition holds, with a deadline so a
// regression fails instead of hanging CI.
#pragma once

#include <poll.h>

#include <chrono>
#include <functional>

#include "knit/pool.hpp"

namespace knit_test {

// Drains `p` (waiting on its completion fd, 10 ms at a time so deadlines also fire) until
// done() is true or `limit` passes. Returns done().
inline bool drain_until(knit::pool& p, const std::function<bool()>& done,
                        std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    pollfd fd{p.completion_fd(), POLLIN, 0};
    ::poll(&fd, 1, 10);
    p.drain();
  }
  return true;
}

}  // namespace knit_test

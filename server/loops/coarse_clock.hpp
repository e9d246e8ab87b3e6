// The monotonic clock as of the kernel's last tick, for deadlines.
//
// CLOCK_MONOTONIC_COARSE is CLOCK_MONOTONIC (what libstdc++'s steady_clock reads) sampled at
// the last timer tick: the same time line, never ahead of steady_clock::now() and at most one
// tick behind it (4 ms at HZ=250, the resolution clock_getres reports). It reads the vDSO's
// stored value without the TSC: 7 ns a read against 41 ns for steady_clock::now() on the
// 2 vCPU guest (a loop of 10^7 reads each, pinned). A keep-alive request sets two deadlines
// (its read's and its write's), which the server's sweep enforces only to its period (10 ms
// at least: server.hpp), so the tick's lag makes a deadline at most 4 ms early. Never for a
// duration that is reported (the latency metric reads steady_clock).
#pragma once

#include <time.h>

#include <chrono>

namespace knit_server {

inline std::chrono::steady_clock::time_point coarse_steady_now() noexcept {
  timespec ts{};
  // Cannot fail: the clock id is valid and ts is writable (clock_gettime(2)).
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec)));
}

}  // namespace knit_server

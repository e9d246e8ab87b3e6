// interleaving_pause: holds a worker (or host) once at one of the pool's interleaving points
// (src/fault_injection.hpp) until the test says go, so the test can act inside the window
// that point opens every run. Tests of one binary run one at a time: one pause at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "fault_injection.hpp"

namespace knit_test {

// The point to pause at once (-1: none), whether a thread is paused there, and the go.
// Writers: pause_at and the test (go); partner: the paused thread in pause_once.
inline std::atomic<int> pause_armed{-1};
inline std::atomic<bool> paused{false}, go{false};

inline void pause_once(knit::detail::interleaving_point where) {
  int want = static_cast<int>(where);
  if (!pause_armed.compare_exchange_strong(want, -1)) return;
  paused = true;
  using namespace std::chrono_literals;
  const auto rescue = std::chrono::steady_clock::now() + 10s;  // a broken test fails, not hangs
  while (!go && std::chrono::steady_clock::now() < rescue) std::this_thread::sleep_for(100us);
}

// Arms one pause at `where` for the test's lifetime.
class pause_at {
 public:
  explicit pause_at(knit::detail::interleaving_point where) {
    paused = false;
    go = false;
    pause_armed = static_cast<int>(where);
    knit::detail::interleaving_hook = pause_once;
  }
  ~pause_at() {
    go = true;
    pause_armed = -1;
    knit::detail::interleaving_hook = nullptr;
  }
  pause_at(const pause_at&) = delete;
  pause_at& operator=(const pause_at&) = delete;
};

}  // namespace knit_test

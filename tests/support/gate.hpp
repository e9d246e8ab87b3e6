// gate: a task blocks on it until the test opens it; a task that "never returns" for as long
// as the test wants. The rescue deadline only keeps a broken test from hanging CI forever.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

namespace knit_test {

struct gate {
  std::atomic<bool> open{false};
  std::atomic<int> waiting{0};   // tasks that have entered wait()
  std::atomic<int> returned{0};  // tasks that have left it

  void wait() {
    waiting.fetch_add(1);
    const auto rescue = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!open.load() && std::chrono::steady_clock::now() < rescue) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    returned.fetch_add(1);
  }
};

// Opens the gate when a test ends early (a failed ASSERT), before the pool waits for the
// call blocked on it.
struct opens_on_exit {
  std::shared_ptr<gate> g;
  ~opens_on_exit() { g->open = true; }
};

// Polls `done` every millisecond until it holds or `limit` passes; returns done(). For
// conditions another thread makes true (a detached worker freeing its record).
template <class Predicate>
bool eventually(Predicate done, std::chrono::milliseconds limit = std::chrono::seconds(60)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace knit_test

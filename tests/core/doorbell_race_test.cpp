// The wake protocol alone, against a fake condition (a counter), apart from the rings:
// a producer publishes items and rings; a consumer drains them and parks with the
// announce / re-check / wait protocol. A lost wake-up shows up as a consumer asleep with
// items left: each test has a deadline and a rescue ring so a regression fails, not hangs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "worker_doorbell.hpp"

namespace {

using knit::detail::worker_doorbell;

constexpr std::uint64_t scaled(std::uint64_t n) {
  return n * KNIT_STRESS_SCALE / (KNIT_SANITIZED ? 10 : 1);
}

TEST(doorbell_race, no_lost_wakeup_with_untimed_park) {
  const std::uint64_t total = scaled(200'000);
  worker_doorbell bell;
  std::atomic<std::uint64_t> published{0}, consumed{0};
  std::atomic<std::uint64_t> rescues{0};
  std::atomic<bool> stop{false};

  std::thread consumer([&] {
    std::uint64_t mine = 0;
    while (mine < total && !stop.load()) {
      if (mine < published.load(std::memory_order_acquire)) {
        ++mine;
        consumed.store(mine, std::memory_order_release);
        continue;
      }
      bell.announce_park();
      // Consider: the producer published after our check above and read our state as
      // running (no wake). This re-check, after the fence, must see its item.
      if (mine < published.load(std::memory_order_acquire) || stop.load()) {
        bell.cancel_park();
        continue;
      }
      bell.wait(0);
    }
  });

  for (std::uint64_t i = 1; i <= total; ++i) {
    published.store(i, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with announce_park's fence
    bell.wake_if_parked();
    if ((i & 1023) == 0) {
      // Let the consumer catch up and park sometimes, so parks and wakes interleave.
      while (consumed.load() + 8 < i) std::this_thread::yield();
    }
  }
  // Deadline: everything must be consumed without help. A rescue wake is counted, and
  // counting any is a failure.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (consumed.load() < total && std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  if (consumed.load() < total) {
    rescues.fetch_add(1);
    stop = true;
    bell.wake_if_parked();
  }
  consumer.join();
  EXPECT_EQ(rescues.load(), 0u) << "consumer slept with items left: lost wake-up";
  EXPECT_EQ(consumed.load(), total);
}

}  // namespace

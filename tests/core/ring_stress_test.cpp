// Ring stress: values cross threads exactly once. Runs under ThreadSanitizer; iteration
// counts scale with KNIT_STRESS_SCALE and shrink under sanitizers.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "knit/job_ring.hpp"

namespace {

constexpr std::uint64_t scaled(std::uint64_t n) {
  return n * KNIT_STRESS_SCALE / (KNIT_SANITIZED ? 10 : 1);
}

// A broken ring (a value taken twice: a claimer took a slot past the tail, or a slot was
// reused too early) runs its head ahead of the pushes, and the producer would find it full
// for ever: whoever sees the breakage sets `broken`, the producer stops pushing, and the
// test fails instead of hanging.

// A claimer's loop: marks each value it takes in `seen` (a second mark breaks the ring),
// then hands it to `took`, until the producer is done and the ring is empty; it yields when
// it finds nothing (more threads than cores: the producer runs).
template <class Took>
void claim_until_done(knit::job_ring<std::uintptr_t>& ring, const std::atomic<bool>& done,
                      std::vector<std::atomic<std::uint8_t>>& seen, std::atomic<bool>& broken,
                      Took took) {
  std::uintptr_t v;
  for (;;) {
    if (ring.try_pop(v)) {
      if (seen[v].fetch_add(1, std::memory_order_relaxed) != 0) {
        broken.store(true, std::memory_order_relaxed);
      }
      took(v);
    } else if (done.load(std::memory_order_acquire) && ring.empty_approx()) {
      return;
    } else {
      std::this_thread::yield();
    }
  }
}

// The producer's loop: pushes 0 .. total-1, calling `between` before each value and after
// each push that found the ring full, until done or the ring is broken.
template <class Between>
void push_until_done(knit::job_ring<std::uintptr_t>& ring, std::uint64_t total,
                     const std::atomic<bool>& broken, Between between) {
  for (std::uintptr_t i = 0; i < total && !broken.load(std::memory_order_relaxed); ++i) {
    between();
    while (!ring.try_push(i) && !broken.load(std::memory_order_relaxed)) {
      std::this_thread::yield();
      between();
    }
  }
}

TEST(ring_stress, job_ring_one_producer_three_claimers_exactly_once) {
  const std::uint64_t total = scaled(300'000);  // 4 threads share 2 cores here
  knit::job_ring<std::uintptr_t> ring(4);       // tiny: constant wrap-around and full states
  std::vector<std::atomic<std::uint8_t>> seen(total);
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> consumed{0};
  std::atomic<bool> broken{false};
  auto consumer = [&] {
    claim_until_done(ring, done, seen, broken,
                     [&](std::uintptr_t) { consumed.fetch_add(1, std::memory_order_relaxed); });
  };
  std::vector<std::thread> consumers;
  for (int i = 0; i < 3; ++i) consumers.emplace_back(consumer);
  push_until_done(ring, total, broken, [] {});
  done.store(true, std::memory_order_release);
  for (auto& t : consumers) t.join();
  EXPECT_FALSE(broken.load()) << "a value was taken twice";
  EXPECT_EQ(consumed.load(), total);
  for (std::uint64_t i = 0; i < total; ++i) ASSERT_EQ(seen[i].load(), 1) << "value " << i;
}

// The pool's way: each taker replies through a channel of its own (release after its CAS),
// and the producer counts the replies into the ring (producer_saw_taken, acquire), so most
// pushes reuse slots on that count, not on a read of the head. A count ahead of the real
// head would let a push overwrite a value nobody took: lost and duplicated values.
TEST(ring_stress, job_ring_reuses_slots_on_the_takers_replies_exactly_once) {
  const std::uint64_t total = scaled(300'000);
  knit::job_ring<std::uintptr_t> ring(4);
  std::vector<std::atomic<std::uint8_t>> seen(total);
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> replies{0};  // writers: the takers (release); reader: producer
  // Broken also when the producer's count is refused (more replies than pushes).
  std::atomic<bool> broken{false};
  auto consumer = [&] {
    claim_until_done(ring, done, seen, broken,
                     [&](std::uintptr_t) { replies.fetch_add(1, std::memory_order_release); });
  };
  std::vector<std::thread> consumers;
  for (int i = 0; i < 2; ++i) consumers.emplace_back(consumer);
  std::uint64_t counted = 0;
  auto count_replies = [&] {
    const std::uint64_t r = replies.load(std::memory_order_acquire);
    for (; counted < r; ++counted) {
      if (!ring.producer_saw_taken()) broken.store(true, std::memory_order_relaxed);
    }
  };
  push_until_done(ring, total, broken, count_replies);
  done.store(true, std::memory_order_release);
  for (auto& t : consumers) t.join();
  count_replies();
  EXPECT_FALSE(broken.load()) << "a value was taken twice, or more were taken than pushed";
  EXPECT_EQ(counted, total);
  EXPECT_EQ(ring.producer_size(), 0u);
  for (std::uint64_t i = 0; i < total; ++i) ASSERT_EQ(seen[i].load(), 1) << "value " << i;
}

}  // namespace

// done_ring stress: both ends at once, each end handed to a new thread now and then (as a
// retired worker's seat and a reused host index are). Every value arrives once, in order,
// or the producer is told the ring is full. Runs under ThreadSanitizer; iteration counts
// scale with KNIT_STRESS_SCALE and shrink under sanitizers.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "done_ring.hpp"

namespace {

constexpr std::uint64_t scaled(std::uint64_t n) {
  return n * KNIT_STRESS_SCALE / (KNIT_SANITIZED ? 10 : 1);
}

using ring_type = knit::detail::done_ring<std::uintptr_t>;

// Pushes values 1..n in order, `per_thread` of them from each of a chain of threads (the
// next starts after the last one is joined); a full ring is retried after a yield.
void produce(ring_type& r, std::uint64_t n, std::uint64_t per_thread,
             std::atomic<std::uint64_t>& full) {
  std::uintptr_t next = 1;
  while (next <= n) {
    std::thread t([&] {
      for (std::uint64_t k = 0; k < per_thread && next <= n; ++k) {
        while (!r.try_push(next)) {
          full.fetch_add(1, std::memory_order_relaxed);
          std::this_thread::yield();
        }
        ++next;
      }
    });
    t.join();
  }
}

TEST(done_ring_stress, every_value_arrives_once_in_order_across_handed_ends) {
  const std::uint64_t n = scaled(2'000'000);
  ring_type r;
  std::atomic<std::uint64_t> full{0};
  std::thread producer([&] { produce(r, n, 50'000, full); });
  std::uintptr_t expected = 1;
  bool in_order = true;
  while (expected <= n && in_order) {
    std::thread consumer([&] {  // the consumer's end changes threads too
      for (std::uint64_t k = 0; k < 70'000 && expected <= n;) {
        std::uintptr_t v = 0;
        if (!r.try_pop(v)) {
          std::this_thread::yield();
          continue;
        }
        if (v != expected) {
          in_order = false;
          return;
        }
        ++expected;
        ++k;
      }
    });
    consumer.join();
  }
  producer.join();
  EXPECT_TRUE(in_order) << "value " << expected << " out of order";
  EXPECT_EQ(expected, n + 1);
  std::uintptr_t v = 0;
  EXPECT_FALSE(r.try_pop(v)) << "nothing past the last push";
  std::printf("done_ring stress: %llu values, the producer found it full %llu times\n",
              static_cast<unsigned long long>(n), static_cast<unsigned long long>(full.load()));
}

}  // namespace

#include "knit/job_ring.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace {

TEST(job_ring, capacity_rounds_up_to_power_of_two) {
  EXPECT_EQ(knit::job_ring<int*>(1).capacity(), 1u);
  EXPECT_EQ(knit::job_ring<int*>(3).capacity(), 4u);
  EXPECT_EQ(knit::job_ring<int*>(1000).capacity(), 1024u);
}

TEST(job_ring, zero_capacity_is_rejected) {
  EXPECT_THROW(knit::job_ring<int*>(0), std::invalid_argument);
}

// Capacities 1, 2 and 4 so every run reaches the full state and wraps many times.
class job_ring_small : public ::testing::TestWithParam<std::size_t> {};

TEST_P(job_ring_small, fifo_full_empty_and_wrap) {
  knit::job_ring<std::uintptr_t> ring(GetParam());
  const std::size_t cap = ring.capacity();
  std::uintptr_t next_in = 1, next_out = 1;
  for (int round = 0; round < 50; ++round) {
    for (std::size_t i = 0; i < cap; ++i) ASSERT_TRUE(ring.try_push(next_in++));
    EXPECT_FALSE(ring.try_push(999)) << "push into a full ring must fail";
    EXPECT_EQ(ring.producer_size(), cap);
    std::uintptr_t v = 0;
    for (std::size_t i = 0; i < cap; ++i) {
      ASSERT_TRUE(ring.try_pop(v));
      EXPECT_EQ(v, next_out++);
    }
    EXPECT_FALSE(ring.try_pop(v)) << "pop from an empty ring must fail";
    EXPECT_EQ(ring.producer_size(), 0u);
  }
}

TEST_P(job_ring_small, interleaved_push_pop) {
  knit::job_ring<std::uintptr_t> ring(GetParam());
  std::uintptr_t v = 0;
  for (std::uintptr_t i = 1; i < 1000; ++i) {
    ASSERT_TRUE(ring.try_push(i));
    ASSERT_TRUE(ring.try_pop(v));
    ASSERT_EQ(v, i);
  }
  EXPECT_TRUE(ring.empty_approx());
}

// The producer told of each value taken (the pool: the record's reply) knows the depth
// without the consumers' head, and reuses the slots as the head would let it.
TEST_P(job_ring_small, values_known_taken_count_as_popped) {
  knit::job_ring<std::uintptr_t> ring(GetParam());
  const std::size_t cap = ring.capacity();
  std::uintptr_t v = 0;
  for (int round = 0; round < 20; ++round) {
    for (std::size_t i = 0; i < cap; ++i) ASSERT_TRUE(ring.try_push(i + 1));
    EXPECT_EQ(ring.producer_size(), cap);
    ASSERT_TRUE(ring.try_pop(v));
    EXPECT_EQ(ring.producer_size(), cap - 1);  // read from the head: one taken
    ASSERT_TRUE(ring.producer_saw_taken());
    EXPECT_EQ(ring.producer_size(), cap - 1);  // the count agrees with the head
    for (std::size_t i = 1; i < cap; ++i) {
      ASSERT_TRUE(ring.try_pop(v));
      ASSERT_TRUE(ring.producer_saw_taken());
    }
    EXPECT_EQ(ring.producer_size(), 0u);
    EXPECT_FALSE(ring.producer_saw_taken()) << "more taken than pushed must be refused";
    EXPECT_EQ(ring.producer_size(), 0u);
  }
}

// A count past what was pushed is refused and changes nothing: had it raised the cached
// head above the pushes, a push would overwrite a value nobody took. (A count of a value
// still in the ring is the caller's bug the ring cannot see without reading the head.)
TEST(job_ring, a_taken_count_past_the_pushes_is_refused) {
  knit::job_ring<std::uintptr_t> ring(2);
  EXPECT_FALSE(ring.producer_saw_taken());  // nothing pushed yet
  ASSERT_TRUE(ring.try_push(1));
  ASSERT_TRUE(ring.try_push(2));
  std::uintptr_t v = 0;
  ASSERT_TRUE(ring.try_pop(v));
  ASSERT_TRUE(ring.try_pop(v));
  ASSERT_TRUE(ring.producer_saw_taken());
  ASSERT_TRUE(ring.producer_saw_taken());
  EXPECT_FALSE(ring.producer_saw_taken());
  EXPECT_FALSE(ring.producer_saw_taken());
  ASSERT_TRUE(ring.try_push(3));
  ASSERT_TRUE(ring.try_push(4));
  EXPECT_FALSE(ring.try_push(5)) << "the refused counts must not free a slot";
  EXPECT_EQ(ring.producer_size(), 2u);
  ASSERT_TRUE(ring.try_pop(v));
  EXPECT_EQ(v, 3u);
  ASSERT_TRUE(ring.try_pop(v));
  EXPECT_EQ(v, 4u);
}

INSTANTIATE_TEST_SUITE_P(capacities, job_ring_small, ::testing::Values(1, 2, 3));

TEST(job_ring, head_and_tail_on_separate_cache_lines) {
  // Layout claim from the protocol comment: the consumer-written head and the
  // producer's line (its tail and cached head) never share a line, and a slot is its
  // sequence and its value, 16 bytes (the memory formula's per-slot term).
  static_assert(alignof(knit::job_ring<int*>) >= knit::detail::kCacheLine);
  static_assert(knit::job_ring<int*>::kSlotBytes == 16);
  SUCCEED();
}

}  // namespace

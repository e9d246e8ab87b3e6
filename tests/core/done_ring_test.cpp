// done_ring (src/done_ring.hpp): one producer, one consumer, a sequence in each slot. Each
// test forces the case a line of the protocol guards, single-threaded, so that a ring
// without that line fails every run; done_ring_stress_test.cpp runs both ends at once.
#include <gtest/gtest.h>

#include <cstdint>

#include "done_ring.hpp"

namespace {

using ring_type = knit::detail::done_ring<std::uintptr_t>;
constexpr std::uintptr_t kSlots = ring_type::kSlots;

TEST(done_ring, pops_in_push_order_and_nothing_more) {
  ring_type r;
  std::uintptr_t v = 0;
  EXPECT_FALSE(r.try_pop(v)) << "a new ring is empty";
  EXPECT_EQ(r.peek(), 0u);
  for (std::uintptr_t i = 1; i <= 10; ++i) ASSERT_TRUE(r.try_push(i));
  EXPECT_EQ(r.peek(), 1u) << "peek names the value try_pop returns next";
  for (std::uintptr_t i = 1; i <= 10; ++i) {
    ASSERT_TRUE(r.try_pop(v));
    EXPECT_EQ(v, i);
  }
  EXPECT_FALSE(r.try_pop(v));
  EXPECT_EQ(r.peek(), 0u);
}

// The producer's cached head says full after kSlots pushes: the push must reload the
// consumer's head, or a ring emptied by its consumer refuses every push for ever.
TEST(done_ring, a_full_ring_takes_a_push_once_the_consumer_took_one) {
  ring_type r;
  for (std::uintptr_t i = 1; i <= kSlots; ++i) ASSERT_TRUE(r.try_push(i));
  EXPECT_FALSE(r.try_push(kSlots + 1)) << "full: no slot may be overwritten";
  std::uintptr_t v = 0;
  ASSERT_TRUE(r.try_pop(v));
  EXPECT_EQ(v, 1u);
  ASSERT_TRUE(r.try_push(kSlots + 1)) << "one slot free";
  EXPECT_FALSE(r.try_push(kSlots + 2));
  for (std::uintptr_t i = 2; i <= kSlots + 1; ++i) {
    ASSERT_TRUE(r.try_pop(v));
    EXPECT_EQ(v, i) << "the value in the reused slot is the newest, taken last";
  }
  EXPECT_FALSE(r.try_pop(v));
}

// After a full lap every slot holds a sequence from the lap before: a consumer that took
// any written slot as ready (not the one sequence it expects) would take them again.
TEST(done_ring, a_slot_from_the_previous_lap_is_empty) {
  ring_type r;
  std::uintptr_t v = 0;
  for (int lap = 0; lap < 3; ++lap) {
    for (std::uintptr_t i = 0; i < kSlots; ++i) ASSERT_TRUE(r.try_push(lap * kSlots + i));
    for (std::uintptr_t i = 0; i < kSlots; ++i) {
      ASSERT_TRUE(r.try_pop(v));
      EXPECT_EQ(v, lap * kSlots + i);
    }
    EXPECT_FALSE(r.try_pop(v)) << "lap " << lap << ": every slot written, none ready";
    EXPECT_EQ(r.peek(), 0u);
  }
  // Half a lap: the slots past the tail still hold the lap before's values.
  for (std::uintptr_t i = 0; i < kSlots / 2; ++i) ASSERT_TRUE(r.try_push(1000 + i));
  for (std::uintptr_t i = 0; i < kSlots / 2; ++i) ASSERT_TRUE(r.try_pop(v));
  EXPECT_FALSE(r.try_pop(v));
}

TEST(done_ring, bytes_counts_the_slots) {
  EXPECT_GE(ring_type::bytes(), kSlots * 16);
  EXPECT_LE(ring_type::bytes(), kSlots * 16 + 4 * 64);
}

}  // namespace

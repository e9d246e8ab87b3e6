// job_ring's consumer windows, forced: a probe (job_ring's Probe) makes another consumer
// and the producer act inside them every time, instead of hoping a stress loop hits them.
// Each test names the line of the protocol (knit/job_ring.hpp) it guards; without that
// line the test fails every run.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>

#include "knit/job_ring.hpp"

namespace {

// Runs `once` (then forgets it) the next time a consumer reaches `where`. The action may
// call the ring itself: it is cleared before it runs, so it is not re-entered.
struct one_shot_probe {
  static inline knit::job_ring_point where = knit::job_ring_point::head_loaded;
  static inline std::function<void()> once;
  static void at(knit::job_ring_point p) {
    if (p != where || !once) return;
    auto action = std::move(once);
    once = nullptr;
    action();
  }
};

using probed_ring = knit::job_ring<std::uintptr_t, one_shot_probe>;

// The race every window test sets up: a ring of 2 holding 10 (index 0, slot 0) and 11
// (index 1, slot 1), and, when a consumer next reaches `where`, consumer B takes index 0
// and the producer, seeing head 1, writes 12 (index 2) into slot 0.
void lap_slot_0_inside(knit::job_ring_point where, probed_ring& ring) {
  ASSERT_TRUE(ring.try_push(10));
  ASSERT_TRUE(ring.try_push(11));
  one_shot_probe::where = where;
  one_shot_probe::once = [&ring] {
    std::uintptr_t b = 0;
    ASSERT_TRUE(ring.try_pop(b));  // consumer B: index 0
    EXPECT_EQ(b, 10u);
    ASSERT_TRUE(ring.try_push(12));  // index 2, into slot 0
  };
}

// Consumer A has read head 0; inside its window slot 0 is lapped (lap_slot_0_inside). A
// then finds slot 0 holding index 2's sequence (3, not 1): its head is stale, not the ring
// empty. It must reload the head and take index 1. Guards "s > h + 1 -> reload head and look
// again": read as empty, A returns false with two values queued (a worker would park on a full
// ring).
TEST(job_ring_interleaving, a_consumer_whose_head_went_stale_reloads_it) {
  probed_ring ring(2);
  ASSERT_NO_FATAL_FAILURE(lap_slot_0_inside(knit::job_ring_point::head_loaded, ring));
  std::uintptr_t a = 0;
  ASSERT_TRUE(ring.try_pop(a)) << "a stale head was read as an empty ring";
  EXPECT_FALSE(one_shot_probe::once) << "the window was not reached";
  EXPECT_EQ(a, 11u);
  ASSERT_TRUE(ring.try_pop(a));
  EXPECT_EQ(a, 12u);
  EXPECT_FALSE(ring.try_pop(a));
}

// The same window in empty_approx, the check a worker makes after its fence before it
// parks: a stale head over a rewritten slot is not an empty ring.
TEST(job_ring_interleaving, empty_approx_over_a_stale_head_reloads_it) {
  probed_ring ring(2);
  ASSERT_NO_FATAL_FAILURE(lap_slot_0_inside(knit::job_ring_point::head_loaded, ring));
  EXPECT_FALSE(ring.empty_approx()) << "two values queued, the ring said empty";
  EXPECT_FALSE(one_shot_probe::once) << "the window was not reached";
}

// Consumer A has read index 0's value; inside its window slot 0 is lapped. A's claim must fail (the
// head moved) and A must take index 1 instead: guards "CAS head h -> h + 1" (a plain store of the
// head would hand index 0's value out twice and lose index 1).
TEST(job_ring_interleaving, a_value_read_before_another_consumer_claimed_it_is_dropped) {
  probed_ring ring(2);
  ASSERT_NO_FATAL_FAILURE(lap_slot_0_inside(knit::job_ring_point::value_loaded, ring));
  std::uintptr_t a = 0;
  ASSERT_TRUE(ring.try_pop(a));
  EXPECT_FALSE(one_shot_probe::once) << "the window was not reached";
  EXPECT_EQ(a, 11u) << "index 0 was handed out twice";
  ASSERT_TRUE(ring.try_pop(a));
  EXPECT_EQ(a, 12u);
  EXPECT_FALSE(ring.try_pop(a));
}

// The producer alone: the sequence, not a tail, says what is published. A value is not
// visible before its push, and a full ring refuses until a consumer's CAS frees a slot.
TEST(job_ring_interleaving, a_slot_not_yet_pushed_reads_empty_after_a_lap) {
  probed_ring ring(2);
  std::uintptr_t v = 0;
  for (std::uintptr_t lap = 0; lap < 3; ++lap) {
    EXPECT_TRUE(ring.empty_approx());
    EXPECT_FALSE(ring.try_pop(v)) << "slot holding index h - K's sequence read as index h";
    ASSERT_TRUE(ring.try_push(2 * lap));
    ASSERT_TRUE(ring.try_push(2 * lap + 1));
    EXPECT_FALSE(ring.try_push(99));
    ASSERT_TRUE(ring.try_pop(v));
    EXPECT_EQ(v, 2 * lap);
    ASSERT_TRUE(ring.try_pop(v));
    EXPECT_EQ(v, 2 * lap + 1);
  }
}

}  // namespace

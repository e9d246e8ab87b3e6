#include "knit/spsc_ring.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "support/counting_value.hpp"

namespace {

using knit_test::counting_value;

class spsc_ring_small : public ::testing::TestWithParam<std::size_t> {};

TEST_P(spsc_ring_small, fifo_full_empty_and_wrap) {
  knit::spsc_ring<int> ring(GetParam());
  const std::size_t cap = ring.capacity();
  int in = 0, out = 0, v = -1;
  for (int round = 0; round < 50; ++round) {
    for (std::size_t i = 0; i < cap; ++i) ASSERT_TRUE(ring.try_push(in++));
    EXPECT_FALSE(ring.try_push(-1));
    for (std::size_t i = 0; i < cap; ++i) {
      ASSERT_TRUE(ring.try_pop(v));
      EXPECT_EQ(v, out++);
    }
    EXPECT_FALSE(ring.try_pop(v));
  }
}

INSTANTIATE_TEST_SUITE_P(capacities, spsc_ring_small, ::testing::Values(1, 2, 3));

TEST(spsc_ring, move_only_values_are_moved_not_copied) {
  knit::spsc_ring<std::unique_ptr<std::string>> ring(2);
  auto p = std::make_unique<std::string>("body");
  const std::string* raw = p.get();
  ASSERT_TRUE(ring.try_push(std::move(p)));
  std::unique_ptr<std::string> out;
  ASSERT_TRUE(ring.try_pop(out));
  EXPECT_EQ(out.get(), raw);
}

TEST(spsc_ring, failed_push_leaves_the_value_with_the_caller) {
  knit::spsc_ring<std::unique_ptr<int>> ring(1);
  ASSERT_TRUE(ring.try_push(std::make_unique<int>(1)));
  auto keep = std::make_unique<int>(2);
  EXPECT_FALSE(ring.try_push(std::move(keep)));
  ASSERT_NE(keep, nullptr);
  EXPECT_EQ(*keep, 2);
}

TEST(spsc_ring, nothing_leaks_or_is_destroyed_twice) {
  const long before = counting_value::live.load();
  {
    knit::spsc_ring<counting_value> ring(3);  // 4 slots
    ASSERT_TRUE(ring.try_push(counting_value(7)));
    for (int round = 0; round < 10; ++round) {
      for (int i = 0; i < 2; ++i)
        ASSERT_TRUE(ring.try_push(counting_value(static_cast<std::uint64_t>(i))));
      counting_value out;
      ASSERT_TRUE(ring.try_pop(out));
      ASSERT_TRUE(ring.try_pop(out));
    }
    // Ring destroyed with values still inside.
  }
  EXPECT_EQ(counting_value::live.load(), before);
}

}  // namespace

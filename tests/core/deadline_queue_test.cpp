// deadline_queue: earliest first, due entries pop in order, stale entries are dropped when
// they surface.
#include "deadline_queue.hpp"

#include <set>

#include <gtest/gtest.h>

namespace {

using knit::detail::deadline_queue;
using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

TEST(deadline_queue, pops_due_entries_earliest_first) {
  deadline_queue q;
  const auto t0 = clock_type::now();
  q.push(t0 + milliseconds(30), 3);
  q.push(t0 + milliseconds(10), 1);
  q.push(t0 + milliseconds(20), 2);
  EXPECT_EQ(q.pop_due(t0), 0u);  // nothing due yet
  EXPECT_EQ(q.pop_due(t0 + milliseconds(20)), 1u);
  EXPECT_EQ(q.pop_due(t0 + milliseconds(20)), 2u);  // due exactly now
  EXPECT_EQ(q.pop_due(t0 + milliseconds(20)), 0u);
  EXPECT_FALSE(q.empty());
  EXPECT_EQ(q.pop_due(t0 + milliseconds(30)), 3u);
  EXPECT_TRUE(q.empty());
}

TEST(deadline_queue, earliest_live_drops_stale_entries) {
  deadline_queue q;
  const auto t0 = clock_type::now();
  q.push(t0 + milliseconds(1), 1);
  q.push(t0 + milliseconds(2), 2);
  q.push(t0 + milliseconds(3), 3);
  std::set<std::uint64_t> live{3};
  auto find = [&](std::uint64_t id) { return live.count(id) != 0; };
  EXPECT_EQ(q.earliest_live(find), t0 + milliseconds(3));
  // The stale entries are gone: even if their ids came back, only 3 is left.
  live = {1, 2, 3};
  EXPECT_EQ(q.pop_due(t0 + milliseconds(5)), 3u);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.earliest_live(find), std::nullopt);
}

TEST(deadline_queue, earliest_live_keeps_the_live_entry) {
  deadline_queue q;
  const auto t0 = clock_type::now();
  q.push(t0 + milliseconds(1), 7);
  auto find = [](std::uint64_t id) { return id == 7; };
  EXPECT_EQ(q.earliest_live(find), t0 + milliseconds(1));
  EXPECT_EQ(q.earliest_live(find), t0 + milliseconds(1));  // reading does not consume it
  EXPECT_FALSE(q.empty());
}

}  // namespace

// The ring's choice of child (src/process/child_choice.hpp), rule by rule, as pure functions.
#include "process/child_choice.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

using knit::detail::child_rule;
using knit::detail::child_view;
using knit::detail::choose_child;
using knit::detail::choose_move;

child_view idle() { return {true, 0, 2, 0, 0}; }
child_view busy(unsigned calls, std::int64_t running_ns, unsigned movable = 0) {
  return {true, calls, 2, movable, running_ns};
}
child_view down() { return {}; }

TEST(child_choice, an_idle_child_first_in_scan_order) {
  std::vector<child_view> v{busy(1, 10), idle(), idle()};
  auto c = choose_child(v, 0, false);
  EXPECT_EQ(c.rule, child_rule::idle);
  EXPECT_EQ(c.child, 1);
  c = choose_child(v, 2, false);  // the scan starts after the last choice
  EXPECT_EQ(c.child, 2);
}

TEST(child_choice, a_slot_with_no_child_before_a_busy_one_until_its_box_was_tried) {
  std::vector<child_view> v{busy(1, 10), down()};
  EXPECT_EQ(choose_child(v, 0, false).rule, child_rule::new_child);
  const auto c = choose_child(v, 0, true);
  EXPECT_EQ(c.rule, child_rule::least_busy);
  EXPECT_EQ(c.child, 0);
}

// A lent slot not lent now (process_ring.hpp, "Lent children") has no box to ask: with it
// taken for a slot whose child is coming, every call would wait for a start never asked.
TEST(child_choice, a_vacant_lent_slot_is_never_chosen) {
  child_view vacant = down();
  vacant.vacant = true;
  std::vector<child_view> v{busy(1, 10), vacant};
  const auto c = choose_child(v, 0, false);
  EXPECT_EQ(c.rule, child_rule::least_busy);
  EXPECT_EQ(c.child, 0);
  EXPECT_EQ(choose_move(v), -1);
}

TEST(child_choice, the_least_busy_child_with_a_free_lane) {
  std::vector<child_view> v{busy(2, 10), busy(1, 10), busy(1, 10)};
  const auto c = choose_child(v, 0, true);
  EXPECT_EQ(c.rule, child_rule::least_busy);
  EXPECT_EQ(c.child, 1);  // ties: the first in index order
}

TEST(child_choice, none_when_every_lane_is_full) {
  std::vector<child_view> v{busy(2, 10), busy(2, 10)};
  EXPECT_EQ(choose_child(v, 0, true).rule, child_rule::none);
}

TEST(child_choice, a_waiting_call_moves_only_when_a_child_idles) {
  std::vector<child_view> v{busy(2, 10, 1), busy(1, 10)};
  EXPECT_EQ(choose_move(v), -1);
  v[1] = idle();
  EXPECT_EQ(choose_move(v), 0);
}

TEST(child_choice, the_move_comes_from_behind_the_call_that_has_run_longest) {
  std::vector<child_view> v{busy(2, 10, 1), busy(2, 900, 1), idle(), busy(2, 5000, 0)};
  EXPECT_EQ(choose_move(v), 1);  // child 3 ran longest but holds nothing movable
}

}  // namespace

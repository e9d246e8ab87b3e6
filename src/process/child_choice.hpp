// child_choice: which of a host's worker processes takes the next call, and which waiting
// call moves to an idle child, as pure functions over what the ring knows of each child (no
// fds, no shared memory, no clock: tests/process/child_choice_test.cpp).
//
// The rule for the call at the head of the ring's FIFO, over the children in scan order
// (from `start`, wrapping around):
//   1. an idle child (up, no call in it): the first one in scan order;
//   2. a slot with no child whose box may hold one (a replacement, a spare, a lent child
//      starting): the ring asks the box; the caller tries these in index order;
//   3. a busy child with a free lane, the one with the fewest calls (ties: the first in
//      index order);
//   otherwise none: the call waits in the FIFO (late binding).
// Moves: a call queued behind another in a child's lanes (not yet started: the child serves
// its lanes in turn) is taken back when some child is idle and the FIFO is empty, the one
// behind the call that has run longest first, so no call waits behind a slow one while a
// child idles.
// A vacant slot (a lent slot not lent now: process_ring.hpp, "Lent children") has no child
// and none coming: no rule picks it.
#pragma once

#include <cstdint>
#include <span>

namespace knit::detail {

// What the ring knows of one of its children.
struct child_view {
  bool up = false;              // a live child, not dead, handshaken
  unsigned calls = 0;           // calls in its lanes (the oldest running)
  unsigned lanes = 0;           // its mapping's lanes
  unsigned movable = 0;         // calls behind the oldest that may still be taken back
  std::int64_t running_ns = 0;  // how long its oldest call has run (0 when idle)
  bool vacant = false;          // a lent slot not lent now: skipped
};

enum class child_rule { idle, new_child, least_busy, none };

struct child_choice {
  int child = -1;  // index into the views; -1 for new_child (the caller asks the boxes) and none
  child_rule rule = child_rule::none;
};

// Where the next call goes. `boxes_tried`: rule 2 was tried and gave no child (then it is
// skipped).
child_choice choose_child(std::span<const child_view> children, unsigned start,
                          bool boxes_tried) noexcept;

// The child whose waiting call should move now, or -1: some child is idle and another holds
// a movable call; among those, the one whose oldest call has run longest.
int choose_move(std::span<const child_view> children) noexcept;

}  // namespace knit::detail

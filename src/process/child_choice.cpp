// child_choice: the ring's choice of child (rules in child_choice.hpp).
#include "process/child_choice.hpp"

namespace knit::detail {

child_choice choose_child(std::span<const child_view> children, unsigned start,
                          bool boxes_tried) noexcept {
  const auto n = static_cast<unsigned>(children.size());
  for (unsigned k = 0; k < n; ++k) {
    const unsigned i = (start + k) % n;
    if (children[i].up && children[i].calls == 0) {
      return {static_cast<int>(i), child_rule::idle};
    }
  }
  if (!boxes_tried) {
    for (const child_view& c : children) {
      if (!c.up && !c.vacant) return {-1, child_rule::new_child};
    }
  }
  int best = -1;
  for (unsigned i = 0; i < n; ++i) {
    const child_view& c = children[i];
    if (!c.up || c.calls >= c.lanes) continue;
    if (best < 0 || c.calls < children[static_cast<unsigned>(best)].calls) {
      best = static_cast<int>(i);
    }
  }
  if (best >= 0) return {best, child_rule::least_busy};
  return {};
}

int choose_move(std::span<const child_view> children) noexcept {
  bool idle = false;
  for (const child_view& c : children) idle = idle || (c.up && c.calls == 0);
  if (!idle) return -1;
  int best = -1;
  for (unsigned i = 0; i < children.size(); ++i) {
    const child_view& c = children[i];
    if (c.movable == 0) continue;
    if (best < 0 || c.running_ns > children[static_cast<unsigned>(best)].running_ns) {
      best = static_cast<int>(i);
    }
  }
  return best;
}

}  // namespace knit::detail

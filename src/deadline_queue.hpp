// deadline_queue: the host's deadlines, earliest first (a binary min-heap of (when, id)).
//
// Contract
//   - An entry is never removed when its call completes or is cancelled (that would cost a
//     search); it goes stale instead. Whoever reads the queue passes a lookup (the call
//     table's find) and stale entries, whose id no longer names a live call, are dropped
//     as they surface.
//   - push() may throw std::bad_alloc (a fault-injection point, src/fault_injection.hpp)
//     and then leaves the queue unchanged.
// Stuck times are not kept here: they follow from each worker's running call
// (worker_seats.cpp).
// Host thread only.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <queue>
#include <vector>

#include "knit/call.hpp"

namespace knit::detail {

class deadline_queue {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  bool empty() const noexcept { return heap_.empty(); }
  void push(time_point when, call_id id);

  // Pops the earliest entry if it is due (when <= now) and returns its id; 0 when none is
  // due. The id may be stale: the caller looks it up.
  call_id pop_due(time_point now);

  // The earliest deadline whose call is still live, dropping stale entries on the way.
  template <class Find>
  std::optional<time_point> earliest_live(const Find& find) {
    while (!heap_.empty()) {
      const entry& top = heap_.top();
      if (find(top.id)) return top.when;
      heap_.pop();  // delivered already: drop the stale entry
    }
    return std::nullopt;
  }

 private:
  struct entry {
    time_point when;
    call_id id;
    bool operator>(const entry& o) const { return when > o.when; }
  };
  std::priority_queue<entry, std::vector<entry>, std::greater<>> heap_;
};

}  // namespace knit::detail

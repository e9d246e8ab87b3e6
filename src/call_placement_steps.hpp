// call_placement_steps: the steps a host takes to accept a call (host_state::enqueue).
//
// Strong guarantee: every step that may allocate (the id-table slot, the deadline heap, the
// backlog) runs before anything is counted or published, and a failure undoes the earlier
// ones; the caller (pool::submit) then destroys the record and rethrows. The caller sets
// everything a worker reads of the record (e.g. stuck_after_ns) before calling, since the
// record may reach a worker's ring here, and commits the slot afterwards.
#pragma once

#include <chrono>
#include <deque>

#include "call_table.hpp"
#include "deadline_queue.hpp"
#include "fault_injection.hpp"
#include "knit/call.hpp"

namespace knit::detail {

struct placed_call {
  call_table::reservation slot;  // to commit once the caller has nothing left that can fail
  bool backlogged = false;       // no ring could take it: it waits in the backlog
};

// `dispatch(c)` pushes c into a ring and returns false when none can take it now.
template <class Dispatch>
placed_call place_call(call_table& calls, deadline_queue& deadlines,
                       std::deque<call_base*>& backlog, call_base* c,
                       std::chrono::nanoseconds timeout, Dispatch&& dispatch) {
  // 1. An id-table slot (call_table.hpp: reused slots, stale ids miss, release never
  //    allocates).
  placed_call placed{calls.reserve()};
  c->id = placed.slot.id;
  // 2. The deadline. If a later step fails, its heap entry goes stale: find() misses it.
  if (timeout.count() > 0) {
    c->deadline = std::chrono::steady_clock::now() + timeout;
    try {
      deadlines.push(c->deadline, c->id);
    } catch (...) {
      calls.undo(placed.slot);
      throw;
    }
  }
  // 3. A ring, or the backlog (keeps submission order: nothing overtakes the backlog).
  if (!backlog.empty() || !dispatch(c)) {
    try {
      check_allocation();
      backlog.push_back(c);
    } catch (...) {
      calls.undo(placed.slot);
      throw;
    }
    placed.backlogged = true;
  }
  return placed;
}

}  // namespace knit::detail

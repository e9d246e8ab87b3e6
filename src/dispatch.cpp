// dispatch: the host's push of one call into a worker ring: it reads the seats the way the
// dispatch rule needs them (dispatch_policy.hpp: the rule and why), pushes into the ring
// the rule chose, and rings that worker's doorbell if it is parked. Part of pool_impl
// (pool_impl.hpp); enqueue, the backlog and the retired rings (worker_seats.cpp) call it.
#include <atomic>

#include "invariant.hpp"
#include "pool_impl.hpp"

namespace knit::detail {

// Chooses a worker ring (dispatch_policy.hpp: the rule and why) and pushes. Returns false
// if no ring can take the call now. The snapshots are built in the rule's scan order and
// only as far as it reads them: no more loads than the rule needs, no clock read unless
// a worker is in a call, and nothing allocated (snapshots_ is sized once).
bool pool_impl::dispatch(call_base* c) {
  const unsigned n = static_cast<unsigned>(slots_.size());
  dispatch_inputs in;
  in.call_ns_estimate = call_ns_estimate_;
  in.wake_cost_ns = wake_cost_ns_;
  in.start = next_;
  for (unsigned k = 0; k < n; ++k) {
    const unsigned i = (next_ + k) % n;
    worker_slot& w = *slots_[i];
    worker_snapshot& s = snapshots_[i];
    s.retired = w.retired;
    if (s.retired) continue;
    s.depth = w.queued.producer_size();
    s.capacity = w.queued.capacity();
    if (!reads_state(s)) continue;
    s.state = w.bell.state();
    if (ends_scan(s)) break;
    // Relaxed: a hint, like the state word (the worker's store; no data depends on it).
    s.call_started_ns = reads_call_start(s, in.wake_cost_ns)
                            ? w.call_started_ns.load(std::memory_order_relaxed)
                            : 0;
    if (s.call_started_ns != 0 && in.now_ns == 0) in.now_ns = steady_now_ns();
  }
  const dispatch_choice choice = choose_worker(snapshots_, in);
  if (choice.worker < 0) return false;  // every ring is full
  const unsigned chosen = static_cast<unsigned>(choice.worker);
  worker_slot& w = *slots_[chosen];
  // The rule chose a ring with depth < capacity, and the host is its only producer.
  const bool pushed = w.queued.try_push(c);
  KNIT_ASSERT(pushed);
  if (!pushed) return false;
  ++out_;
  next_ = (chosen + 1) % n;
  if (shared_.options.doorbell) {
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with the worker's park fence
    if (w.bell.wake_if_parked()) counters_.host_wakes.bump();
  }
  return true;
}

}  // namespace knit::detail

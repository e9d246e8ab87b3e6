// fault_injection: a test-only failure point for the pool's host-side allocations, always
// compiled in (one relaxed load of a zero counter when unused) so that release builds are
// the builds under test. Internal: not installed, and its switches are not exported from
// libknit.so (the tests that set them link the static library, where the test and the
// library share one copy of each switch).
//
// Each allocation site inside pool::submit calls check_allocation() right before the
// operation that may allocate: the call record, id-table growth, deadline-heap growth,
// backlog growth. A test sets allocation_countdown = n: the nth check from then on throws
// std::bad_alloc (and resets the countdown to 0 = off), so a test can fail each site in
// turn and prove that nothing was counted, queued or leaked (tests/core/exception_safety_test.cpp).
// deliver() allocates nothing (the id table's free list is reserved when the table grows),
// so it has no failure point. Host thread only, like submit.
#pragma once

#include <atomic>
#include <new>

namespace knit::detail {

// 0 = off. Writer: a test (a store, or the fetch_sub below on the host thread); partner:
// the host's relaxed load in check_allocation. A test switch: it publishes no data.
inline std::atomic<int> allocation_countdown{0};

// Interleaving points: a test-only pause (or action) in a worker or a host at a window the
// many-hosts protocol guards (src/host_state.hpp), or the lending one (src/lent_workers.cpp),
// so a test can make the other side act inside it every time instead of hoping a loop hits
// it (tests/core/many_hosts_interleaving_test.cpp, lend_interleavings_test.cpp). Off
// (null) it costs a relaxed load of a line nobody writes, on paths where the worker has
// found nothing to do or the host is about to wait, once per call a worker starts, and
// once per completion that goes through the host's list.
enum class interleaving_point {
  ring_found_empty,        // worker going to park: ring(h, w) empty, bit h not cleared yet
  before_park,             // worker: nothing claimed, empty rings' bits cleared, not parked
  claimed_not_started,     // worker: took a call and looked for more behind it; its start
                           // not stamped yet, so dispatch still sees it between calls
  host_loaded_mask_hint,   // host holding checks: loaded its bit of the seat's mask, not
                           // pushed yet (the window a stale load leaves to the flush)
  host_took_completions,   // host: its drain took its completions (drain_steps)
  completion_listed,       // worker: a record goes back through the host's list (stolen,
                           // lent, or its seat's done ring to that host full)
  host_sleeps_with_calls,  // host leaving or shutting down: calls out, going to sleep (settle)
  lent_found_nothing,      // lent worker: claimed nothing, still working (leaving not stored)
  lent_leaving,            // lent worker: leaving stored, its fence and re-check not done yet
};
// Writer: a test; partner: the worker's relaxed load in at_interleaving_point.
inline std::atomic<void (*)(interleaving_point)> interleaving_hook{nullptr};

inline void at_interleaving_point(interleaving_point where) {
  if (auto hook = interleaving_hook.load(std::memory_order_relaxed)) [[unlikely]]
    hook(where);
}

inline void check_allocation() {
  if (allocation_countdown.load(std::memory_order_relaxed) == 0) [[likely]]
    return;
  if (allocation_countdown.fetch_sub(1, std::memory_order_relaxed) == 1) throw std::bad_alloc();
}

}  // namespace knit::detail

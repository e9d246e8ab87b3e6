// dispatch_policy: which worker ring takes the next call, as a pure function over what the
// host read of each worker (no threads, no atomics, no clock: tests/core/dispatch_policy_test.cpp).
//
// The rule (docs/design.md, "Dispatch", step 2), over the workers in scan order (from
// `start`, wrapping around), skipping retired workers and full rings:
//   1. a spinning worker with an empty ring: it catches the call with no syscall. The
//      first one in scan order ends the scan;
//   2. an awake (not parked) worker expected to reach the call sooner than a wake-up
//      would take (wake_cost_ns): waking costs the host 10-16 µs of CPU on the 2-vCPU VMs
//      this was built on, more than a /ping. Expected wait = what is left of its current
//      call (from the host's running estimate of a call's duration) + the calls queued
//      before it. A call already running longer than the estimate is of unknown length,
//      so nothing queues behind it: that keeps a long call from holding others back while
//      peers sleep. The smallest wait wins; ties go to the first in scan order. When a worker
//      claims a call and sees more behind it, it wakes a parked peer itself (worker.cpp),
//      so bursts cost the host nothing;
//   3. the lowest-numbered parked worker (keeps the others in deep sleep);
//   4. the shortest ring (ties: the first in scan order);
//   otherwise no choice: every ring is full (the call waits in the host's backlog).
// Starting the scan after the last choice lets equal candidates share the load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "worker_doorbell.hpp"

namespace knit::detail {

// What dispatch reads of one worker. The host builds it from the worker's atomics; fields
// the rule does not need are left alone (see reads_state / reads_call_start), so building a
// snapshot costs no more loads than the rule uses. 32 bytes; the pool keeps one per seat.
struct worker_snapshot {
  std::size_t depth = 0;             // calls queued in its ring (producer's view)
  std::size_t capacity = 0;          // that ring's capacity
  std::int64_t call_started_ns = 0;  // steady ns its current call started; 0 = between calls
  worker_state state = worker_state::running;  // read only if the ring has room
  bool retired = false;                        // host-only flag: the slot left service, skip it
};
static_assert(sizeof(worker_snapshot) <= 32,
              "keep the per-seat scratch small (memory bound in docs/design.md)");

struct dispatch_inputs {
  std::int64_t call_ns_estimate = 0;  // host's running estimate of one call's duration
  std::int64_t wake_cost_ns = 0;      // pool_options::wake_cost_us in ns; 0 disables rule 2
  std::int64_t now_ns = 0;            // steady ns; read only if some call_started_ns != 0
  unsigned start = 0;                 // scan starts at this worker
};

enum class dispatch_rule { spinning_idle, sooner_than_wake, parked, shortest_ring, none };

struct dispatch_choice {
  int worker = -1;  // index into the snapshots; -1 when rule == none
  dispatch_rule rule = dispatch_rule::none;
};

// Whether the host must read anything of its workers: not with a single seat, where every
// rule picks that seat's ring when it has room and none when it is full, whatever the
// worker is doing; the push itself finds a full ring. Reading the worker's state, its call
// start and its ring's head there would decide nothing and only pull lines the worker
// writes (its state around each spin, its call start twice a call, the head at each claim)
// into the host's cache on every call (bench/results/handoff-lines-2026-12-06).
inline bool reads_workers(std::size_t seats) noexcept { return seats > 1; }

// Whether the host must read a worker's state word: only if its ring has room.
inline bool reads_state(const worker_snapshot& s) noexcept {
  return !s.retired && s.depth < s.capacity;
}

// Whether the host must read call_started_ns, given the state: only for an awake worker
// while rule 2 is on.
inline bool reads_call_start(const worker_snapshot& s, std::int64_t wake_cost_ns) noexcept {
  return reads_state(s) && s.state != worker_state::parked && wake_cost_ns > 0;
}

// Whether this snapshot ends the scan (rule 1): snapshots after it in scan order are not
// read, so the host may stop building them.
inline bool ends_scan(const worker_snapshot& s) noexcept {
  return reads_state(s) && s.depth == 0 && s.state == worker_state::spinning;
}

// Applies the rule. `workers` is indexed by seat; the scan runs from inputs.start.
dispatch_choice choose_worker(std::span<const worker_snapshot> workers,
                              const dispatch_inputs& inputs) noexcept;

}  // namespace knit::detail

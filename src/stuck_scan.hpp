// stuck_scan: finding one host's running calls and those past their stuck_after
// (host_state.cpp). Host h reads only current_of[h] of each seat's worker, so it only ever
// dereferences its own records, which stay alive until they are back in its hands
// (pool_shared.hpp, worker_slot::current_of). What a host does with a stuck call is the
// caller's.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "pool_shared.hpp"

namespace knit::detail {

struct running_call {
  unsigned seat = 0;
  worker_slot* slot = nullptr;  // the seat's slot when it was read
  call_base* record = nullptr;  // host h's, alive: it has not come back yet
  std::int64_t started_ns = 0;  // this call's start or later (never earlier)
};

// Calls f(running_call) for every seat whose worker runs one of host h's calls, and every
// lent worker that does (`seat` seat_count + k for lent slot k: lent_workers.cpp).
template <class F>
void for_each_running(const pool_shared& shared, unsigned h, F&& f) {
  for (unsigned w = 0; w < shared.slot_count(); ++w) {
    worker_slot& slot = shared.any_slot(w);
    // Partner: the worker's release store of current_of[h] after call_started_ns
    // (worker.cpp, execute): the start read below is at least this call's.
    call_base* c = slot.current_of[h].load(std::memory_order_acquire);
    if (!c) continue;
    f(running_call{w, &slot, c, slot.call_started_ns.load(std::memory_order_relaxed)});
  }
}

// The call has run for at least its stuck_after at `now_ns`.
inline bool runs_past_its_limit(const running_call& r, std::int64_t now_ns) noexcept {
  const std::int64_t limit = r.record->stuck_after_ns;
  return limit > 0 && r.started_ns != 0 && now_ns - r.started_ns >= limit;
}

// When host h must look again: the earliest start + limit of its running calls; if some
// of its `out` records are not running yet, no later than now + the smallest limit in use
// (an early wake-up only costs a drain). Nothing when detection is off or nothing is out.
inline std::optional<std::chrono::steady_clock::time_point> next_stuck_check(
    const pool_shared& shared, unsigned h, std::size_t out, std::int64_t min_stuck_ns) {
  using clock = std::chrono::steady_clock;
  std::optional<clock::time_point> best;
  if (min_stuck_ns <= 0 || out == 0) return best;
  auto consider = [&](clock::time_point t) {
    if (!best || t < *best) best = t;
  };
  std::size_t running = 0;
  for_each_running(shared, h, [&](const running_call& r) {
    ++running;
    if (r.started_ns != 0 && r.record->stuck_after_ns > 0) {
      consider(clock::time_point(std::chrono::duration_cast<clock::duration>(
          std::chrono::nanoseconds(r.started_ns + r.record->stuck_after_ns))));
    }
  });
  if (out > running) consider(clock::now() + std::chrono::nanoseconds(min_stuck_ns));
  return best;
}

}  // namespace knit::detail

// call_state: the moves of a call record's state word (knit/call.hpp, "Lifecycle"), each a
// CAS between the host and the worker that holds the record, checked in checked builds
// (invariant.hpp): a move not in the lifecycle, or a lost CAS to a state the lifecycle
// does not allow there, aborts.
//
//   queued  -> running    worker claims it        loses to: abandoned (the host gave up)
//   queued  -> abandoned  host cancels / expires  loses to: running, done, stuck
//   running -> done       worker finished it      loses to: stuck (the host retired it)
//   running -> stuck      host retires a worker   loses to: done (it just finished)
//
// Writer: the side named above; partner: the other side's CAS on the same word. acq_rel on
// both sides, so the winner's earlier writes (the result, for done) reach the loser.
#pragma once

#include <atomic>

#include "invariant.hpp"
#include "knit/call.hpp"
#include "knit/detail/cache_line.hpp"

namespace knit::detail {

constexpr bool is_call_move(call_state from, call_state to) noexcept {
  if (from == call_state::queued) return to == call_state::running || to == call_state::abandoned;
  if (from == call_state::running) return to == call_state::done || to == call_state::stuck;
  return false;
}

// What a lost CAS from -> to may have found instead (the table above).
constexpr bool may_lose_to(call_state from, call_state to, call_state seen) noexcept {
  if (from == call_state::queued && to == call_state::running) return seen == call_state::abandoned;
  if (from == call_state::queued) {
    return seen == call_state::running || seen == call_state::done || seen == call_state::stuck;
  }
  if (to == call_state::done) return seen == call_state::stuck;
  return seen == call_state::done;
}

// Asks for both of c's lines (the state word's; the task, argument and result's) as this
// thread's, together: the side about to touch a record the other side wrote last (the
// worker claiming it, the host taking it back) reads the first and the second would come
// only after it, shared, then cross again to be written. A hint: it changes no value.
inline void ask_for_record(const call_base* c) noexcept {
  __builtin_prefetch(c, 1, 3);
  __builtin_prefetch(reinterpret_cast<const char*>(c) + kCacheLine, 1, 3);
}

// Moves c from `from` to `to`; false if the other side moved it first.
inline bool try_move(call_base& c, call_state from, call_state to) noexcept {
  KNIT_ASSERT(is_call_move(from, to));
  call_state seen = from;
  if (c.state.compare_exchange_strong(seen, to, std::memory_order_acq_rel)) return true;
  KNIT_ASSERT(may_lose_to(from, to, seen));
  return false;
}

}  // namespace knit::detail

// call_table: the host's id table: which accepted call an id names, until its handler runs.
//
// Contract
//   - An id is (sequence << 32) | index: the index is the call's slot in the table, the
//     sequence a per-table counter (never 0), so an id whose slot was reused by a later
//     call misses instead of naming the wrong call. Id 0 is never issued.
//   - Taking a slot is two-phase for submit's strong guarantee: reserve() may allocate
//     (and throws before it changes anything observable); undo() or commit() then follow,
//     and neither can fail.
//   - release() (the handler is about to run) never allocates: the free list's capacity is
//     kept at least the table's size whenever the table grows.
//   - find() returns a call only while it is in the table and not yet delivered.
// Host thread only.
#pragma once

#include <cstdint>
#include <vector>

#include "knit/call.hpp"

namespace knit::detail {

class call_table {
 public:
  struct reservation {
    std::uint32_t index;
    bool reused;  // the slot came from the free list (still on it until commit)
    call_id id;
  };

  // A slot and a fresh id for a call about to be accepted. May throw std::bad_alloc (each
  // growth is a fault-injection point: src/fault_injection.hpp); then the table is
  // as it was, apart from a grown capacity.
  reservation reserve();
  // A later step of the submit failed: the slot goes back (cannot throw).
  void undo(const reservation& r) noexcept;
  // The call is accepted: it fills the slot.
  void commit(const reservation& r, call_base* c) noexcept;
  // The call is being delivered: its slot is free for reuse (never allocates).
  void release(call_id id) noexcept;

  call_base* find(call_id id) const noexcept {
    const std::uint32_t index = static_cast<std::uint32_t>(id & 0xffffffffu);
    if (id == 0 || index >= live_.size()) return nullptr;
    call_base* c = live_[index];
    return (c && c->id == id && !c->delivered) ? c : nullptr;
  }

  // Calls f(call_base*) for every occupied slot, in slot order. f may release() slots.
  template <class F>
  void for_each(F&& f) {
    for (std::size_t i = 0; i < live_.size(); ++i) {
      if (live_[i]) f(live_[i]);
    }
  }

 private:
  std::vector<call_base*> live_;           // index = id & 0xffffffff; null when free
  std::vector<std::uint32_t> free_slots_;  // capacity >= live_.size()
  std::uint32_t sequence_ = 0;
};

}  // namespace knit::detail

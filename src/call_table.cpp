// call_table: slot reservation, reuse and release (contract in call_table.hpp).
#include "call_table.hpp"

#include <algorithm>

#include "fault_injection.hpp"

namespace knit::detail {

call_table::reservation call_table::reserve() {
  reservation r{};
  r.reused = !free_slots_.empty();
  if (r.reused) {
    r.index = free_slots_.back();  // popped at commit: undo has nothing to put back
  } else {
    if (free_slots_.capacity() < live_.size() + 1) {
      check_allocation();
      free_slots_.reserve(std::max<std::size_t>(2 * free_slots_.capacity(), live_.size() + 1));
    }
    check_allocation();
    live_.push_back(nullptr);
    r.index = static_cast<std::uint32_t>(live_.size() - 1);
  }
  if (++sequence_ == 0) ++sequence_;
  r.id = (std::uint64_t{sequence_} << 32) | r.index;
  return r;
}

void call_table::undo(const reservation& r) noexcept {
  if (!r.reused) free_slots_.push_back(r.index);  // capacity reserved in reserve(): cannot throw
}

void call_table::commit(const reservation& r, call_base* c) noexcept {
  if (r.reused) free_slots_.pop_back();
  live_[r.index] = c;
}

void call_table::release(call_id id) noexcept {
  const std::uint32_t index = static_cast<std::uint32_t>(id & 0xffffffffu);
  live_[index] = nullptr;
  free_slots_.push_back(index);  // capacity >= live_.size(): never allocates
}

}  // namespace knit::detail

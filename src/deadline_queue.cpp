// deadline_queue: push and due-entry popping (contract in deadline_queue.hpp).
#include "deadline_queue.hpp"

#include "fault_injection.hpp"

namespace knit::detail {

void deadline_queue::push(time_point when, call_id id) {
  check_allocation();
  heap_.push({when, id});
}

call_id deadline_queue::pop_due(time_point now) {
  if (heap_.empty() || heap_.top().when > now) return 0;
  const call_id id = heap_.top().id;
  heap_.pop();
  return id;
}

}  // namespace knit::detail

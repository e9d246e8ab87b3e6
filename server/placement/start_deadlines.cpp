// The queue-wait deadline's FIFO: tickets in, completions marked, the due ones handed out.
#include "placement/start_deadlines.hpp"

#include "invariant.hpp"  // KNIT_ASSERT (the knit_internal target)

namespace knit_server {

std::uint64_t start_deadlines::add(knit::call_id id, clock::time_point now) {
  const clock::time_point due = now + limit_;
  KNIT_ASSERT(fifo_.empty() || fifo_.back().due <= due);  // submit order is deadline order
  fifo_.push_back(entry{id, due, false});
  return front_ + fifo_.size() - 1;
}

void start_deadlines::name(std::uint64_t ticket, knit::call_id id) noexcept {
  KNIT_ASSERT(ticket >= front_ && ticket - front_ < fifo_.size());
  if (ticket < front_ || ticket - front_ >= fifo_.size()) return;
  fifo_[static_cast<std::size_t>(ticket - front_)].id = id;
}

void start_deadlines::done(std::uint64_t ticket) noexcept {
  if (ticket < front_) return;  // its deadline was already checked: it left the FIFO then
  const std::uint64_t at = ticket - front_;
  KNIT_ASSERT(at < fifo_.size());
  if (at >= fifo_.size()) return;
  fifo_[static_cast<std::size_t>(at)].done = true;
  drop_done_front();
}

void start_deadlines::drop_done_front() noexcept {
  while (!fifo_.empty() && fifo_.front().done) {
    fifo_.pop_front();
    ++front_;
  }
}

}  // namespace knit_server

// The pool placement's admission check, its service meter, and the outcomes it notes.
#include "placement/pool_placement.hpp"

#include "invariant.hpp"  // KNIT_ASSERT (the knit_internal target)

namespace knit_server {

std::optional<heavy_outcome> pool_placement::admit() noexcept {
  switch (decide_admission(queue(), admission_)) {
    case admission::accept: return std::nullopt;
    case admission::reject_delay: return refuse(refusal_reason::queue_delay);
    case admission::reject_count: return refuse(refusal_reason::queue_count);
  }
  return std::nullopt;
}

heavy_outcome pool_placement::refuse(refusal_reason why) noexcept {
  heavy_outcome out = heavy_outcome::refused(why);
  ledger_.note(out);
  return out;
}

heavy_outcome pool_placement::finish(route r, knit::result<heavy_output>&& result) noexcept {
  heavy_outcome out = heavy_outcome::of(r, std::move(result));
  ledger_.note(out);  // a stuck call: /readyz and knit_stuck_calls_total
  return out;
}

queue_state pool_placement::queue() const noexcept {
  const knit::pool& pool = host_.get_pool();
  return {pool.pending(), pool.options().threads, pool.call_time_estimate(), meter_.interval()};
}

void pool_placement::on_completion() noexcept {
  // The pool has already counted this call out of pending() when its handler runs.
  const knit::pool& pool = host_.get_pool();
  meter_.on_completion(service_meter::clock::now(), pool.pending(), pool.options().threads);
}

void pool_placement::track(knit::call_id id, std::uint64_t ticket) noexcept {
  deadlines_.name(ticket, id);
  arm_deadline_timer();
}

void pool_placement::arm_deadline_timer() noexcept {
  if (timer_armed_) return;
  const std::optional<start_deadlines::clock::time_point> due = deadlines_.next_due();
  if (!due) return;
  try {
    deadline_timer_.expires_at(*due);
    // Aborted only when the placement is destroyed (the timer is re-armed only after it
    // fired): then `this` is not touched.
    deadline_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec == boost::asio::error::operation_aborted) return;
      timer_armed_ = false;
      on_deadline();
    });
    timer_armed_ = true;
  } catch (const std::exception&) {
    // Out of memory for the wait: the calls stay tracked, and the next submit arms it.
  }
}

void pool_placement::on_deadline() {
  knit::pool& pool = host_.get_pool();
  deadlines_.expire(start_deadlines::clock::now(), [this, &pool](knit::call_id id) {
    shedding_ = true;
    const bool refused = pool.cancel(id);  // false: running or complete, left alone
    shedding_ = false;
    return refused;
  });
  arm_deadline_timer();
}

void pool_placement::log_process_failure(const knit::result<std::string>& r) const {
  if (err_ == nullptr) return;
  if (r.error() != knit::errc::worker_crashed && r.error() != knit::errc::worker_start_failed) {
    return;
  }
  err_->write_line("knit-server: " + knit::failure_message(r) +
                   " (answered 500; the next call on that worker starts a new process)");
}

knit::result<heavy_output> pool_placement::heavy_result_of(knit::result<std::string>&& r) {
  if (!r.ok()) return knit::result<heavy_output>(r.error(), r.exception());
  if (std::optional<heavy_output> out = decode_heavy_output(r.value())) {
    return knit::result<heavy_output>(std::move(*out));
  }
  return knit::result<heavy_output>(knit::make_error_code(knit::errc::worker_crashed));
}

}  // namespace knit_server

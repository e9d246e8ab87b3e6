// The pool placement's admission check, its service meter and its answers for calls that came
// back without a value.
#include "pool_placement.hpp"

namespace knit_server {

std::optional<heavy_refusal> pool_placement::admit() const noexcept {
  switch (decide_admission(queue(), admission_)) {
    case admission::accept: return std::nullopt;
    case admission::reject_delay: return refuse_for(refusal_reason::queue_delay);
    case admission::reject_count: return refuse_for(refusal_reason::queue_count);
  }
  return std::nullopt;
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

heavy_output pool_placement::from_error(std::error_code ec) {
  using boost::beast::http::status;
  if (std::optional<heavy_output> answer = process_answer(ec)) return std::move(*answer);
  // A stuck call gets 504, not 503. 503 tells a client the server is overloaded or going
  // away and to retry later (the admission refusals, with Retry-After); a stuck call is
  // neither: the server took the request and its worker, the "upstream" that was to
  // produce the page, did not answer in time (KNIT_STUCK_MS), which is what 504 says. The
  // same request would likely get stuck again, so no Retry-After invites a retry.
  if (ec == knit::errc::stuck) {
    return {status::gateway_timeout,
            "Gateway Timeout: the task was stuck (it ran longer than KNIT_STUCK_MS) and was "
            "abandoned"};
  }
  if (ec == knit::errc::timed_out) {
    return {status::gateway_timeout, "Gateway Timeout: the task ran past its deadline"};
  }
  // Only shutdown's deadline cancels a call here (the server never calls pool::cancel):
  // this server instance is going away, another may answer, so 503 with Retry-After.
  if (ec == knit::errc::cancelled) {
    return {status::service_unavailable,
            "Service Unavailable: the server is stopping and gave up on the task"};
  }
  return failed_output();
}

}  // namespace knit_server

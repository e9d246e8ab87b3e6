// Each heavy outcome's status, type and body, from the route's result or knit's errc, and the
// ledger that counts the refusals and stuck calls among them.
#include "placement/heavy_outcome.hpp"

#include <utility>

#include <knit/error.hpp>

namespace knit_server {

namespace http = boost::beast::http;

namespace {

heavy_outcome server_answer(heavy_result what, http::status status, std::string_view text,
                            bool retry_after = false) noexcept {
  heavy_outcome out;
  out.what = what;
  out.status = status;
  out.type = content_type::text;
  out.text = text;
  out.retry_after = retry_after;
  return out;
}

heavy_outcome crashed(std::string_view text) noexcept {
  return server_answer(heavy_result::crashed, http::status::internal_server_error, text);
}

}  // namespace

heavy_outcome heavy_outcome::of(route r, knit::result<heavy_output>&& result) noexcept {
  if (!result.ok()) return of_error(result.error());
  return answered(r, std::move(result).value());
}

heavy_outcome heavy_outcome::answered(route r, heavy_output&& out) noexcept {
  heavy_outcome answer;
  answer.what = heavy_result::ok;
  answer.status = out.status;
  // /ssr answers HTML; /jwt answers JSON, its 400 "Bad request" included (the reference route
  // sets the content type for both outcomes).
  answer.type = r == route::ssr ? content_type::html : content_type::json_utf8;
  answer.page = std::move(out.body);
  return answer;
}

heavy_outcome heavy_outcome::refused(refusal_reason why) noexcept {
  // The reason phrase, as every refusal the server decides itself (fill_overloaded).
  heavy_outcome out = server_answer(heavy_result::refused, http::status::service_unavailable,
                                    "Service Unavailable", true);
  out.reason = why;
  return out;
}

heavy_outcome heavy_outcome::failed() noexcept {
  return server_answer(heavy_result::failed, http::status::internal_server_error,
                       "Internal Server Error");
}

heavy_outcome heavy_outcome::of_error(std::error_code ec) noexcept {
  if (ec == knit::errc::stuck) {
    return server_answer(heavy_result::stuck, http::status::gateway_timeout,
                         "Gateway Timeout: the task was stuck (it ran longer than KNIT_STUCK_MS) "
                         "and was abandoned");
  }
  if (ec == knit::errc::timed_out) {
    return server_answer(heavy_result::timed_out, http::status::gateway_timeout,
                         "Gateway Timeout: the task ran past its deadline");
  }
  if (ec == knit::errc::cancelled) {
    return server_answer(heavy_result::cancelled, http::status::service_unavailable,
                         "Service Unavailable: the server is stopping and gave up on the task",
                         true);
  }
  if (ec == knit::errc::worker_crashed) {
    return crashed("Internal Server Error: the worker process running the task crashed");
  }
  if (ec == knit::errc::worker_start_failed) {
    return crashed("Internal Server Error: no worker process could be started");
  }
  if (ec == knit::errc::sandbox_violation) {
    return crashed("Internal Server Error: the worker process was stopped by its sandbox");
  }
  if (ec == knit::errc::memory_limit) {
    return crashed("Internal Server Error: the task went over the worker's memory limit");
  }
  if (ec == knit::errc::payload_too_large) {
    return crashed("Internal Server Error: the answer was over the worker's arena");
  }
  // task_failed, and what a completion never carries here (queue_full and shut_down refuse
  // at submit: heavy_result::refused).
  return failed();
}

void fill(response& res, heavy_outcome&& out) {
  if (out.what == heavy_result::ok) {
    knit_server::fill(res, out.status, out.type, std::move(out.page));
  } else {
    fill_copy(res, out.status, out.type, out.text);
  }
  res.retry_after = out.retry_after;
}

void heavy_ledger::note(const heavy_outcome& out) noexcept {
  switch (out.what) {
    case heavy_result::refused:
      rejected_.count(out.reason);
      health_.note_refusal(health_events::clock::now());  // /readyz: degraded for a while
      break;
    case heavy_result::stuck:
    case heavy_result::timed_out: health_.note_stuck(health_events::clock::now()); break;
    default: break;
  }
}

}  // namespace knit_server

// heavy_outcome: each errc and each refusal to its status, content type, body and Retry-After,
// the bytes a session writes for it, and what the ledger counts of it.
#include <exception>
#include <stdexcept>
#include <string>
#include <system_error>

#include <gtest/gtest.h>
#include <knit/error.hpp>

#include "http/responses.hpp"
#include "placement/heavy_outcome.hpp"

namespace {

using namespace knit_server;
using boost::beast::http::status;

heavy_outcome of_errc(knit::errc e) { return heavy_outcome::of_error(knit::make_error_code(e)); }

// The head and body a session sends for `out` (keep-alive HTTP/1.1).
std::string wire(heavy_outcome out) {
  response res;
  res.retry_after = true;  // a reused response: fill must reset what it does not set
  fill(res, std::move(out));
  std::string head;
  serialize_head(head, res, connection_header::none);
  return head + res.body;
}

std::string wire(const response& res) {
  std::string head;
  serialize_head(head, res, connection_header::none);
  return head + res.body;
}

TEST(heavy_outcome, a_route_answer_keeps_its_status_in_the_routes_type) {
  heavy_outcome ssr = heavy_outcome::answered(route::ssr, heavy_output{status::ok, "<p>", 0});
  EXPECT_EQ(ssr.what, heavy_result::ok);
  EXPECT_EQ(ssr.status, status::ok);
  EXPECT_EQ(ssr.type, content_type::html);
  EXPECT_EQ(ssr.page, "<p>");
  EXPECT_FALSE(ssr.retry_after);

  heavy_outcome jwt = heavy_outcome::of(
      route::jwt, knit::result<heavy_output>(heavy_output{status::bad_request, "Bad request", 0}));
  EXPECT_EQ(jwt.what, heavy_result::ok);
  EXPECT_EQ(jwt.status, status::bad_request);
  EXPECT_EQ(jwt.type, content_type::json_utf8);
  EXPECT_EQ(wire(std::move(jwt)),
            "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\n"
            "Content-Length: 11\r\n\r\nBad request");
}

TEST(heavy_outcome, every_refusal_is_503_with_retry_after_as_fill_overloaded_writes_it) {
  response overloaded;
  fill_overloaded(overloaded);
  for (refusal_reason why : {refusal_reason::queue_delay, refusal_reason::queue_count,
                             refusal_reason::pool_full, refusal_reason::write_budget}) {
    heavy_outcome out = heavy_outcome::refused(why);
    EXPECT_EQ(out.what, heavy_result::refused);
    EXPECT_EQ(out.status, status::service_unavailable);
    EXPECT_TRUE(out.retry_after);
    EXPECT_EQ(out.reason, why);
    EXPECT_EQ(wire(std::move(out)), wire(overloaded));
  }
}

TEST(heavy_outcome, a_task_that_threw_is_500_as_hono_answers_it) {
  response error;
  fill_error(error, status::internal_server_error);
  heavy_outcome out = heavy_outcome::of(
      route::ssr, knit::result<heavy_output>(knit::make_error_code(knit::errc::task_failed),
                                             std::make_exception_ptr(std::bad_alloc())));
  EXPECT_EQ(out.what, heavy_result::failed);
  EXPECT_EQ(out.status, status::internal_server_error);
  EXPECT_EQ(out.type, content_type::text);
  EXPECT_FALSE(out.retry_after);
  EXPECT_EQ(wire(std::move(out)), wire(error));
  EXPECT_EQ(wire(heavy_outcome::failed()), wire(error));  // could not be handed over
  // An errc a completion never carries here is a failure too, not a refusal.
  EXPECT_EQ(of_errc(knit::errc::queue_full).what, heavy_result::failed);
  EXPECT_EQ(of_errc(knit::errc::shut_down).what, heavy_result::failed);
}

TEST(heavy_outcome, a_stuck_call_is_504_without_retry_after) {
  heavy_outcome out = of_errc(knit::errc::stuck);
  EXPECT_EQ(out.what, heavy_result::stuck);
  EXPECT_EQ(out.status, status::gateway_timeout);
  EXPECT_FALSE(out.retry_after);
  EXPECT_EQ(wire(std::move(out)),
            "HTTP/1.1 504 Gateway Timeout\r\nContent-Type: text/plain; charset=UTF-8\r\n"
            "Content-Length: 88\r\n\r\nGateway Timeout: the task was stuck (it ran longer than "
            "KNIT_STUCK_MS) and was abandoned");
}

TEST(heavy_outcome, a_call_past_its_deadline_is_504) {
  const heavy_outcome out = of_errc(knit::errc::timed_out);
  EXPECT_EQ(out.what, heavy_result::timed_out);
  EXPECT_EQ(out.status, status::gateway_timeout);
  EXPECT_FALSE(out.retry_after);
  EXPECT_EQ(out.text, "Gateway Timeout: the task ran past its deadline");
}

TEST(heavy_outcome, a_call_given_up_at_the_stop_deadline_is_503_with_retry_after) {
  heavy_outcome out = of_errc(knit::errc::cancelled);
  EXPECT_EQ(out.what, heavy_result::cancelled);
  EXPECT_EQ(out.status, status::service_unavailable);
  EXPECT_TRUE(out.retry_after);
  EXPECT_EQ(wire(std::move(out)),
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=UTF-8\r\n"
            "Content-Length: 67\r\nRetry-After: 1\r\n\r\n"
            "Service Unavailable: the server is stopping and gave up on the task");
}

TEST(heavy_outcome, every_process_worker_failure_is_500_never_503) {
  const struct {
    knit::errc e;
    const char* text;
  } cases[] = {
      {knit::errc::worker_crashed,
       "Internal Server Error: the worker process running the task crashed"},
      {knit::errc::worker_start_failed,
       "Internal Server Error: no worker process could be started"},
      {knit::errc::sandbox_violation,
       "Internal Server Error: the worker process was stopped by its sandbox"},
      {knit::errc::memory_limit,
       "Internal Server Error: the task went over the worker's memory limit"},
      {knit::errc::payload_too_large,
       "Internal Server Error: the answer was over the worker's arena"},
  };
  for (const auto& c : cases) {
    const heavy_outcome out = of_errc(c.e);
    EXPECT_EQ(out.what, heavy_result::crashed) << c.text;
    EXPECT_EQ(out.status, status::internal_server_error) << c.text;
    EXPECT_EQ(out.type, content_type::text) << c.text;
    EXPECT_FALSE(out.retry_after) << c.text;
    EXPECT_EQ(out.text, c.text);
  }
}

TEST(heavy_ledger, counts_refusals_by_reason_and_stuck_calls_and_nothing_else) {
  heavy_ledger ledger;
  ledger.note(heavy_outcome::answered(route::ssr, heavy_output{status::ok, "page", 0}));
  ledger.note(heavy_outcome::failed());
  ledger.note(of_errc(knit::errc::cancelled));
  ledger.note(of_errc(knit::errc::worker_crashed));
  EXPECT_EQ(ledger.rejected().pool_full.load() + ledger.rejected().queue_delay.load() +
                ledger.rejected().queue_count.load() + ledger.rejected().write_budget.load(),
            0U);
  EXPECT_EQ(ledger.health().last_refusal(), health_events::clock::time_point::min());
  EXPECT_EQ(ledger.health().stuck_total(), 0U);

  ledger.note(heavy_outcome::refused(refusal_reason::queue_delay));
  ledger.note(heavy_outcome::refused(refusal_reason::write_budget));
  ledger.note(heavy_outcome::refused(refusal_reason::write_budget));
  EXPECT_EQ(ledger.rejected().queue_delay.load(), 1U);
  EXPECT_EQ(ledger.rejected().write_budget.load(), 2U);
  EXPECT_EQ(ledger.rejected().pool_full.load(), 0U);
  EXPECT_NE(ledger.health().last_refusal(), health_events::clock::time_point::min());

  ledger.note(of_errc(knit::errc::stuck));
  ledger.note(of_errc(knit::errc::timed_out));
  EXPECT_EQ(ledger.health().stuck_total(), 2U);
}

}  // namespace

// What became of one heavy call (/ssr, /jwt) and the answer that says so: built by the placement
// where it knows what happened (the route's result, admission's verdict, knit's errc), written by
// the session as it is (session::respond).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

#include <boost/beast/http/status.hpp>
#include <knit/result.hpp>

#include "http/responses.hpp"
#include "http/router.hpp"
#include "placement/heavy_job.hpp"
#include "telemetry/health_events.hpp"
#include "telemetry/refusal_reason.hpp"
#include "telemetry/stats.hpp"

namespace knit_server {

// What happened, and what the client gets for it (heavy_outcome.cpp builds each):
//   ok         the route answered: 200, or /jwt's 400; text/html (/ssr) or JSON (/jwt)
//   refused    not started (admission, its queue-wait deadline, a full pool, the write
//              budget): 503 + Retry-After, the connection stays open
//   failed     the task threw (errc::task_failed), or could not be handed over (out of
//              memory), or an errc this server never expects: 500, what Hono's default
//              error handler answers
//   stuck      errc::stuck, ran past KNIT_STUCK_MS and was abandoned (its worker replaced):
//              504 (the "upstream" did not answer in time); no Retry-After, the same request
//              would likely get stuck again
//   timed_out  errc::timed_out, ran past its deadline: 504
//   cancelled  errc::cancelled, given up at the stop deadline: 503 + Retry-After, another
//              instance may answer (the server's own pool::cancel, the queue-wait deadline,
//              is a refusal: pool_placement builds it as refused, queue_wait)
//   crashed    KNIT_ISOLATION=process: the worker process died or broke the protocol
//              (worker_crashed), none could start (worker_start_failed), its sandbox stopped
//              it (sandbox_violation), it went over its memory limit (memory_limit), or the
//              answer overflowed its arena (payload_too_large): 500, never 503, so that a
//              balancer does not replay a request that kills workers
// Every answer but ok's is text/plain; its body is a literal (no allocation to refuse).
enum class heavy_result : std::uint8_t {
  ok,
  refused,
  failed,
  stuck,
  timed_out,
  cancelled,
  crashed
};

struct heavy_outcome {
  heavy_result what = heavy_result::failed;
  boost::beast::http::status status = boost::beast::http::status::internal_server_error;
  std::string_view type = content_type::text;         // one of content_type::*
  std::string page;                                   // ok: the route's body, moved in
  std::string_view text;                              // anything else: the server's own body
  bool retry_after = false;                           // adds "Retry-After: 1" (refused, cancelled)
  refusal_reason reason = refusal_reason::pool_full;  // refused: what knit-stats counts it under

  // The route's answer for route `r`: its output, or (an error) of_error's.
  static heavy_outcome of(route r, knit::result<heavy_output>&& result) noexcept;
  // The route ran and answered `out`.
  static heavy_outcome answered(route r, heavy_output&& out) noexcept;
  // Refused before it started, for `why`.
  static heavy_outcome refused(refusal_reason why) noexcept;
  // The task threw, or the call could not be handed over.
  static heavy_outcome failed() noexcept;
  // A call that came back without a value: the table above, by errc.
  static heavy_outcome of_error(std::error_code ec) noexcept;
};

// Writes `out` into the session's response: the page moved in, a text copied into the
// response's own string (which allocates nothing once it has grown).
void fill(response& res, heavy_outcome&& out);

// One event loop's tally of the heavy calls that did not answer: refusals by reason
// (knit-stats' "rejected", /metrics) and the times of the last refusal and of the calls given
// up as stuck (/readyz, health_events.hpp). The placement notes each outcome where it builds
// it; the ledger looks at refusals and stuck calls only (one clock read, on a path that is
// already answering 503 or 504), never at a request that was answered.
//
// Threads: noted on the session's thread (KNIT_MODE=multi: any io thread); both tallies are
// relaxed atomics that any thread may read.
class heavy_ledger {
 public:
  heavy_ledger() = default;
  heavy_ledger(const heavy_ledger&) = delete;
  heavy_ledger& operator=(const heavy_ledger&) = delete;

  // Counts `out` if it is a refusal (by reason, and its time) or a call given up as stuck or
  // timed out (its time: both were counted as stuck calls before there were outcomes).
  void note(const heavy_outcome& out) noexcept;

  rejection_counters& rejected() noexcept { return rejected_; }
  const rejection_counters& rejected() const noexcept { return rejected_; }
  health_events& health() noexcept { return health_; }
  const health_events& health() const noexcept { return health_; }

 private:
  rejection_counters rejected_;
  health_events health_;
};

}  // namespace knit_server

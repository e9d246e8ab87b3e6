// Why a heavy call was not started: the placement's verdict, which the session turns into a 503 or
// 500.
#pragma once

#include <boost/beast/http/status.hpp>

namespace knit_server {

enum class refusal_reason {
  queue_delay,     // admission: the expected wait exceeds KNIT_MAX_QUEUE_MS
  queue_count,     // admission: KNIT_MAX_QUEUED calls are already ahead
  pool_full,       // the pool refused the call (KNIT_MAX_PENDING reached, or shutting down)
  write_budget,    // unfinished writes park more than KNIT_MEMORY_BUDGET_MB (write_budget.hpp)
  internal_error,  // the call could not be handed over (out of memory): 500, not counted
};

// A heavy call refused before it started. The session answers it at once and the connection
// stays open: a 503 gets Retry-After (fill_overloaded), anything else is fill_error(status).
struct heavy_refusal {
  boost::beast::http::status status = boost::beast::http::status::service_unavailable;
  refusal_reason reason = refusal_reason::pool_full;
};

constexpr heavy_refusal refuse_for(refusal_reason reason) noexcept {
  return {reason == refusal_reason::internal_error
              ? boost::beast::http::status::internal_server_error
              : boost::beast::http::status::service_unavailable,
          reason};
}

}  // namespace knit_server

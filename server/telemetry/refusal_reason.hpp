// Why a heavy call was refused before it started: the reason knit-stats' "rejected" and /metrics
// count it under (heavy_outcome::refused answers every one with 503 + Retry-After).
#pragma once

#include <cstdint>

namespace knit_server {

enum class refusal_reason : std::uint8_t {
  queue_delay,   // admission: the expected wait exceeds KNIT_MAX_QUEUE_MS
  queue_count,   // admission: KNIT_MAX_QUEUED calls are already ahead
  queue_wait,    // the queue-wait deadline: not started within KNIT_MAX_QUEUE_WAIT_MS
                 // (start_deadlines.hpp)
  pool_full,     // the pool refused the call (KNIT_MAX_PENDING reached, or shutting down)
  write_budget,  // unfinished writes park more than KNIT_MEMORY_BUDGET_MB (write_budget.hpp)
};

}  // namespace knit_server

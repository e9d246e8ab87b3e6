// metrics_exposition: the /metrics page in the Prometheus text exposition format 0.0.4, from
// a snapshot of the process's figures.
//
// Format (https://prometheus.io/docs/instrumenting/exposition_formats/, version 0.0.4): lines
// ending in '\n'; for each metric family a "# HELP name text" line and a "# TYPE name
// counter|gauge|histogram" line, then its samples "name{label="value",...} number". A
// histogram's samples are name_bucket{le="bound"} (cumulative, ending with le="+Inf"),
// name_sum and name_count (= the +Inf bucket). Names are knit_..., in base units (_seconds,
// _bytes), counters end in _total.
//
// Families (per event loop with host="N" when there are several, KNIT_HOSTS>1):
//   knit_http_requests_total{route,code}            counter  responses by route and status
//   knit_http_request_duration_seconds{route}       histogram  request read whole -> response
//                                                   written, by route (fixed bounds)
//   knit_admission_refusals_total{reason}           counter  503s: queue_delay, queue_count,
//                                                   pool_full, write_budget, queue_wait
//   knit_stuck_calls_total                          counter  heavy calls answered 504
//   knit_open_connections                           gauge
//   knit_buffered_bytes                             gauge    server::buffered_bytes
// Process-wide:
//   knit_ready, knit_draining                       gauge    1 or 0 (readiness.hpp)
//   knit_pool_threads, knit_pool_retired_running    gauge    (with a knit pool)
//   knit_pool_<host counter>_total                  counter  knit::pool_stats' host side,
//                                                   per pool host (host="N") when several
//   knit_pool_calls_stuck_total, knit_pool_workers_replaced_total           counter
//   knit_pool_worker_<counter>_total{worker="N"}    counter  every KNIT_WORKER_COUNTERS entry
//   knit_worker_process_crashes_total, _respawns_total, _kills_total   counter  (KNIT_ISOLATION=
//   knit_worker_processes, knit_worker_processes_crash_looping  gauge     process only)
// A requests_total sample is written only for a (route, code) seen at least once; every
// other sample is always written, zero included, so a series exists from the first scrape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <knit/stats.hpp>

#include "http/responses.hpp"
#include "ops/readiness.hpp"
#include "telemetry/request_metrics.hpp"
#include "telemetry/stats.hpp"

namespace knit_server {

// One event loop's figures.
struct host_metrics {
  request_totals requests;
  std::uint64_t refused_queue_delay = 0;
  std::uint64_t refused_queue_count = 0;
  std::uint64_t refused_pool_full = 0;
  std::uint64_t refused_write_budget = 0;
  std::uint64_t refused_queue_wait = 0;
  std::uint64_t stuck_calls = 0;
  std::uint64_t open_connections = 0;
  std::uint64_t buffered_bytes = 0;
};

struct metrics_snapshot {
  std::vector<host_metrics> hosts;     // in host order; host="N" labels when more than one
  readiness ready = readiness::ready;  // what /readyz would answer now
  // The write budget (write_budget.hpp), one for every host: what unfinished writes count,
  // and the limit. Both 0 in a server built without one.
  std::uint64_t parked_bytes = 0;
  std::uint64_t budget_bytes = 0;
  const knit::pool_stats* pool = nullptr;         // null without a knit pool
  std::optional<worker_process_figures> workers;  // KNIT_ISOLATION=process only
};

// The Content-Type of the page (the one the session sends).
inline constexpr std::string_view kMetricsContentType = content_type::prometheus;

// The whole page (see above).
std::string format_metrics(const metrics_snapshot& snapshot);

}  // namespace knit_server

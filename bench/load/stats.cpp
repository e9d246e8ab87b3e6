// Per-route counters and latency histograms: recording and merging.
#include "stats.hpp"

#include <algorithm>

namespace knit_load {

void route_load_stats::record_response(int status, nanos intended, nanos sent_at, nanos done) {
  ++requests;
  if (status >= 200 && status < 300) ++successes;
  if (status >= 0 && status < static_cast<int>(status_counts.size())) ++status_counts[status];
  latency.record(static_cast<std::uint64_t>(std::max<nanos>(0, done - intended)));
  uncorrected.record(static_cast<std::uint64_t>(std::max<nanos>(0, done - sent_at)));
}

void route_load_stats::record_error(error_kind kind) {
  switch (kind) {
    case error_kind::kConnect: ++connect_errors; break;
    case error_kind::kRead: ++read_errors; break;
    case error_kind::kTimeout: ++timeouts; break;
    case error_kind::kParse: ++parse_errors; break;
  }
}

void route_load_stats::merge(const route_load_stats& other) {
  requests += other.requests;
  successes += other.successes;
  for (std::size_t i = 0; i < status_counts.size(); ++i) status_counts[i] += other.status_counts[i];
  connect_errors += other.connect_errors;
  read_errors += other.read_errors;
  timeouts += other.timeouts;
  parse_errors += other.parse_errors;
  sent += other.sent;
  in_flight_at_end += other.in_flight_at_end;
  backlog_at_end += other.backlog_at_end;
  latency.merge(other.latency);
  uncorrected.merge(other.uncorrected);
}

}  // namespace knit_load

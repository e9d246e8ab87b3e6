// Per-route counters and latency histograms; one per route per thread, merged after the run.
#pragma once

#include <array>
#include <cstdint>

#include "clock.hpp"
#include "histogram.hpp"

namespace knit_load {

enum class error_kind {
  kConnect,  // connect() refused / failed / timed out
  kRead,     // I/O error or premature close on an established connection
  kTimeout,  // no full response within --timeout-ms
  kParse,    // the server's bytes were not a valid HTTP/1.x response
};

struct route_load_stats {
  // Responses fully received inside the measured window, whatever their status.
  std::uint64_t requests = 0;
  std::uint64_t successes = 0;  // 2xx
  std::array<std::uint64_t, 1000> status_counts{};
  std::uint64_t connect_errors = 0;
  std::uint64_t read_errors = 0;
  std::uint64_t timeouts = 0;
  std::uint64_t parse_errors = 0;
  std::uint64_t sent = 0;  // requests written inside the window
  // Requests still unanswered when the window closed: discarded, counted nowhere else.
  std::uint64_t in_flight_at_end = 0;
  // Open loop: sends that were due before the window closed but never got a connection.
  std::uint64_t backlog_at_end = 0;
  // From the intended send time (CO-corrected in open loop; equal to actual in closed loop).
  latency_histogram latency;
  // From the actual send time.
  latency_histogram uncorrected;

  void record_response(int status, nanos intended, nanos sent_at, nanos done);
  void record_error(error_kind kind);
  std::uint64_t errors() const { return connect_errors + read_errors + timeouts + parse_errors; }
  void merge(const route_load_stats& other);
};

}  // namespace knit_load

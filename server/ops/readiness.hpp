// The readiness policy: whether this process wants traffic (GET /readyz 200) or not (503), from
// what it has seen: the drain, admission's recent refusals, a run of stuck calls.
//
// Policy, in order (the first that holds decides):
//   1. draining: SIGTERM has begun the drain (drain_sequence.hpp)         -> draining
//   2. refusing work: admission or the pool refused a heavy call (503) within the last
//      refusal_window (1 s)                                              -> refusing_work
//   3. workers stuck: stuck_calls (3) heavy calls were given up as stuck (504, each one a
//      worker retired and replaced) within the last stuck_window (60 s)   -> workers_stuck
//   4. workers crash-looping: a pool worker's processes crashed crash_loop_crashes times
//      within crash_loop_window (KNIT_ISOLATION=process; knit::process_options), so its
//      respawns back off                                                  -> workers_crash_looping
//   5. otherwise                                                          -> ready
// 2, 3 and 4 are "degraded": the process is alive (/livez stays 200) but another instance would
// serve the next request better. Each clears by itself once its window has passed without a
// new event, so a load balancer puts the instance back without anyone restarting it. One
// stuck call is not a crash loop (a client sent a pathological body); three in a minute
// mean the workers are being replaced as fast as they are started.
//
// Mechanism apart: the event times are recorded by the sessions (health_events.hpp) and
// gathered over every event loop by process_status.hpp; this file only decides.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace knit_server {

enum class readiness {
  ready,                  // 200 "ok\n"
  draining,               // 503 "draining\n"
  refusing_work,          // 503 "degraded: refusing work\n"
  workers_stuck,          // 503 "degraded: workers stuck\n"
  workers_crash_looping,  // 503 "degraded: workers crash-looping\n"
};

struct readiness_policy {
  std::chrono::steady_clock::duration refusal_window = std::chrono::seconds(1);
  std::size_t stuck_calls = 3;
  std::chrono::steady_clock::duration stuck_window = std::chrono::seconds(60);
};

// What the policy looks at, gathered at `now`. A time_point of min() means "never".
struct readiness_signals {
  std::chrono::steady_clock::time_point now;
  bool draining = false;
  // The most recent admission or pool refusal.
  std::chrono::steady_clock::time_point last_refusal = std::chrono::steady_clock::time_point::min();
  // The stuck_calls-th most recent stuck call (min() when there have been fewer).
  std::chrono::steady_clock::time_point nth_last_stuck =
      std::chrono::steady_clock::time_point::min();
  // Pool workers whose worker processes are in a crash loop now (knit::process_stats).
  std::uint64_t crash_looping_workers = 0;
};

readiness assess_readiness(const readiness_signals& signals, const readiness_policy& policy = {});

// 200 for ready, 503 otherwise.
constexpr unsigned readiness_status(readiness r) noexcept {
  return r == readiness::ready ? 200 : 503;
}

// The response body: "ok\n", "draining\n", "degraded: refusing work\n", "degraded: workers
// stuck\n", "degraded: workers crash-looping\n".
std::string_view readiness_body(readiness r) noexcept;

}  // namespace knit_server

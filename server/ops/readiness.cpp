// The readiness policy's decision (readiness.hpp) and its answers.
#include "ops/readiness.hpp"

namespace knit_server {

namespace {

// True when `at` (min() = never) lies within `window` before `now`.
bool within(std::chrono::steady_clock::time_point at, std::chrono::steady_clock::time_point now,
            std::chrono::steady_clock::duration window) {
  if (at == std::chrono::steady_clock::time_point::min()) return false;
  return now - at < window;  // `at` after `now` (another thread's clock read) counts as recent
}

}  // namespace

readiness assess_readiness(const readiness_signals& signals, const readiness_policy& policy) {
  if (signals.draining) return readiness::draining;
  if (within(signals.last_refusal, signals.now, policy.refusal_window)) {
    return readiness::refusing_work;
  }
  if (policy.stuck_calls > 0 && within(signals.nth_last_stuck, signals.now, policy.stuck_window)) {
    return readiness::workers_stuck;
  }
  if (signals.crash_looping_workers > 0) return readiness::workers_crash_looping;
  return readiness::ready;
}

std::string_view readiness_body(readiness r) noexcept {
  switch (r) {
    case readiness::ready: return "ok\n";
    case readiness::draining: return "draining\n";
    case readiness::refusing_work: return "degraded: refusing work\n";
    case readiness::workers_stuck: return "degraded: workers stuck\n";
    case readiness::workers_crash_looping: return "degraded: workers crash-looping\n";
  }
  return "degraded\n";
}

}  // namespace knit_server

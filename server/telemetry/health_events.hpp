// health_events: when one event loop last refused a heavy call and when its last few heavy calls
// were given up as stuck, for the readiness policy (readiness.hpp) and the stuck-call metric.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace knit_server {

// Recorded by the sessions only when a refusal or a stuck call happens (a clock read on a
// path that is already answering 503 or 504), never per request; read by whichever thread
// answers /readyz or /metrics (process_status.hpp), on any host.
//
// Threads: a refusal or stuck call is recorded on the session's thread; with KNIT_MODE=multi
// that is any of the io threads, so the stuck slot is claimed with a fetch_add (rare, and
// correct with any number of writers). Every field is a relaxed atomic: a reader wants a
// recent time, not an order with anything else; a reader that misses the latest event sees it
// at its next look.
class health_events {
 public:
  using clock = std::chrono::steady_clock;

  // How many stuck-call times are kept: at least readiness_policy::stuck_calls.
  static constexpr std::size_t kStuckKept = 8;

  health_events() {
    for (auto& t : stuck_at_) t.store(kNever, std::memory_order_relaxed);
  }
  health_events(const health_events&) = delete;
  health_events& operator=(const health_events&) = delete;

  // Admission or the pool refused a heavy call (a 503 + Retry-After) at `now`.
  void note_refusal(clock::time_point now) noexcept {
    last_refusal_.store(now.time_since_epoch().count(), std::memory_order_relaxed);
  }

  // A heavy call was given up as stuck (answered 504) at `now`.
  void note_stuck(clock::time_point now) noexcept {
    const std::uint64_t n = stuck_total_.fetch_add(1, std::memory_order_relaxed);
    stuck_at_[n % kStuckKept].store(now.time_since_epoch().count(), std::memory_order_relaxed);
  }

  // The last refusal's time; time_point::min() if there was none.
  clock::time_point last_refusal() const noexcept {
    return at(last_refusal_.load(std::memory_order_relaxed));
  }

  // Stuck calls so far.
  std::uint64_t stuck_total() const noexcept {
    return stuck_total_.load(std::memory_order_relaxed);
  }

  // Appends the kept stuck-call times (up to kStuckKept, the most recent ones) to `out`.
  void append_stuck_times(std::vector<clock::time_point>& out) const {
    for (const auto& t : stuck_at_) {
      const clock::rep r = t.load(std::memory_order_relaxed);
      if (r != kNever) out.push_back(at(r));
    }
  }

 private:
  static constexpr clock::rep kNever = clock::time_point::min().time_since_epoch().count();
  static clock::time_point at(clock::rep r) noexcept {
    return clock::time_point(clock::duration(r));
  }

  std::atomic<clock::rep> last_refusal_{kNever};
  std::atomic<std::uint64_t> stuck_total_{0};
  std::array<std::atomic<clock::rep>, kStuckKept> stuck_at_;  // a ring, by stuck_total_
};

}  // namespace knit_server

// The admission rule: refuse a heavy call when too many calls are ahead of it, or when they would
// make it wait too long.
#include "placement/admission.hpp"

#include <algorithm>
#include <limits>

namespace knit_server {

void service_meter::on_completion(clock::time_point now, std::size_t pending_after,
                                  std::size_t threads) noexcept {
  if (saturated_since_last_) {
    const std::int64_t dt =
        std::max<std::int64_t>(std::chrono::nanoseconds(now - last_).count(), 0);
    std::int64_t& slot = ring_[samples_ % window];
    if (samples_ >= window) sum_ -= slot;  // the oldest interval leaves the window
    slot = dt;
    sum_ += dt;
    ++samples_;
  }
  last_ = now;
  saturated_since_last_ = pending_after >= std::max<std::size_t>(threads, 1);
}

std::chrono::nanoseconds service_meter::interval() const noexcept {
  if (samples_ == 0) return std::chrono::nanoseconds{0};
  const auto n = static_cast<std::int64_t>(std::min<std::uint64_t>(samples_, window));
  return std::chrono::nanoseconds{sum_ / n};
}

std::chrono::nanoseconds expected_wait(const queue_state& q) noexcept {
  const auto threads = static_cast<std::int64_t>(std::max<std::size_t>(q.threads, 1));
  constexpr auto kAheadCap = static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max());
  const auto ahead = static_cast<std::int64_t>(std::min<std::size_t>(q.ahead, kAheadCap));
  if (ahead < threads) return std::chrono::nanoseconds{0};  // a worker is free
  const std::int64_t completions = ahead - threads + 1;     // before a worker frees up for us

  std::int64_t per_completion = std::max<std::int64_t>(q.service_interval.count(), 0);
  std::int64_t divisor = 1;
  if (per_completion == 0) {
    // No saturated sample yet: assume the workers run in parallel, call_time / threads each.
    per_completion = std::max<std::int64_t>(q.call_time.count(), 0);
    divisor = threads;
  }
  // completions < 2^31 and an interval is far below 2^32 ns (4 s) in any sane run; saturate
  // anyway rather than overflow on a pathological estimate.
  if (per_completion != 0 &&
      completions > std::numeric_limits<std::int64_t>::max() / per_completion) {
    return std::chrono::nanoseconds::max();
  }
  return std::chrono::nanoseconds(completions * per_completion / divisor);
}

admission decide_admission(const queue_state& q, const admission_policy& policy) noexcept {
  if (policy.max_queued != 0 && q.ahead >= policy.max_queued) return admission::reject_count;
  if (policy.max_queue_delay.count() != 0 && expected_wait(q) > policy.max_queue_delay) {
    return admission::reject_delay;
  }
  return admission::accept;
}

}  // namespace knit_server

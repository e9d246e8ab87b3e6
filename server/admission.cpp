// The admission rule: refuse a heavy call when too many calls are ahead of it, or when they would make it wait too long.
#include "admission.hpp"

#include <algorithm>
#include <limits>

namespace knit_server {

std::chrono::nanoseconds expected_wait(const queue_state& q) noexcept {
  const auto per_call = std::max<std::int64_t>(q.call_time.count(), 0);
  const auto threads = static_cast<std::int64_t>(std::max<std::size_t>(q.threads, 1));
  const auto ahead = static_cast<std::int64_t>(
      std::min<std::size_t>(q.ahead, static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())));
  // ahead < 2^31 and a call's estimate is far below 2^32 ns (4 s) in any sane run; saturate
  // anyway rather than overflow on a pathological estimate.
  if (per_call != 0 && ahead > std::numeric_limits<std::int64_t>::max() / per_call) {
    return std::chrono::nanoseconds::max();
  }
  return std::chrono::nanoseconds(ahead * per_call / threads);
}

admission decide_admission(const queue_state& q, const admission_policy& policy) noexcept {
  if (policy.max_queued != 0 && q.ahead >= policy.max_queued) return admission::reject_count;
  if (policy.max_queue_delay.count() != 0 && expected_wait(q) > policy.max_queue_delay) {
    return admission::reject_delay;
  }
  return admission::accept;
}

}  // namespace knit_server

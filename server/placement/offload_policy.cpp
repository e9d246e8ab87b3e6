// The auto mode's per-route EWMA with hysteresis.
#include "placement/offload_policy.hpp"

#include <algorithm>

namespace knit_server {

offload_policy::decision offload_policy::next() noexcept {
  decision d;
  d.pooled = pooled_;
  ++(pooled_ ? pooled_calls_ : inline_calls_);
  d.measure = since_sample_ == 0;
  const std::uint32_t period = pooled_ ? kPooledSamplePeriod : kInlineSamplePeriod;
  since_sample_ = since_sample_ + 1 >= period ? 0 : since_sample_ + 1;
  return d;
}

void offload_policy::record(std::uint64_t cpu_ns) noexcept {
  // One sample can move the average by at most (4 T - avg) / 8 < T/2: a single slow call
  // (a page fault, a cold cache, the clock's own syscall) cannot push a cheap route over T,
  // while a route that really costs more than T still crosses within a few samples.
  const auto sample =
      static_cast<std::int64_t>(std::min(cpu_ns, kSampleCapFactor * enter_pool_ns_));
  average_ns_ = samples_ == 0 ? sample : average_ns_ + (sample - average_ns_) / kEwmaDivisor;
  ++samples_;

  const auto average = static_cast<std::uint64_t>(average_ns_);
  const bool pooled = pooled_ ? average >= leave_pool_ns_ : average > enter_pool_ns_;
  if (pooled != pooled_) {
    pooled_ = pooled;
    ++switches_;
    // The first call on the new path is measured: its cost there is what decides next.
    since_sample_ = 0;
  }
}

}  // namespace knit_server

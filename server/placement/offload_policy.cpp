// The auto mode's per-route EWMA with hysteresis, and KNIT_AUTO_INLINE_US.
#include "placement/offload_policy.hpp"

#include <algorithm>
#include <charconv>
#include <string>

namespace knit_server {

offload_options offload_options_from_env(const env_lookup& getenv) {
  constexpr const char* kName = "KNIT_AUTO_INLINE_US";
  offload_options options;
  const std::optional<std::string> text = getenv(kName);
  if (!text || text->empty()) return options;  // unset and empty mean the default, as in config.cpp

  // The same shape and checks as config.cpp's integers: plain decimal, no sign, in range.
  std::uint64_t value = 0;
  const char* last = text->data() + text->size();
  const auto [end, ec] = std::from_chars(text->data(), last, value);
  if (ec != std::errc{} || end != last || value < 1 || value > offload_options::kMaxInlineUs) {
    throw server_config_error(std::string(kName) + "=\"" + *text +
                              "\": must be an integer from 1 to " +
                              std::to_string(offload_options::kMaxInlineUs));
  }
  options.inline_below_us = static_cast<std::uint32_t>(value);
  return options;
}

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

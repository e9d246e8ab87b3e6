// The one monotonic nanosecond clock that every timestamp in knit-load comes from.
#pragma once

#include <cstdint>
#include <ctime>
#include <limits>

namespace knit_load {

using nanos = std::int64_t;

inline constexpr nanos kNanosPerSecond = 1'000'000'000;
inline constexpr nanos kNanosPerMilli = 1'000'000;
inline constexpr nanos kNever = std::numeric_limits<nanos>::max();

// CLOCK_MONOTONIC is what timerfd uses too, so deadlines and timestamps share one time base.
// clock_gettime goes through the vDSO (~20 ns), cheap enough to call once per event.
inline nanos now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<nanos>(ts.tv_sec) * kNanosPerSecond + ts.tv_nsec;
}

}  // namespace knit_load

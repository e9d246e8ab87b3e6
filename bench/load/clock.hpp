// The one monotonic nanosecond clock that every timestamp in knit-load comes from.
#pragma once

#include <cstdint>
#include <ctime>
#include <limits>

namespace knit_load {

using Nanos = std::int64_t;

inline constexpr Nanos kNanosPerSecond = 1'000'000'000;
inline constexpr Nanos kNanosPerMilli = 1'000'000;
inline constexpr Nanos kNever = std::numeric_limits<Nanos>::max();

// CLOCK_MONOTONIC is what timerfd uses too, so deadlines and timestamps share one time base.
// clock_gettime goes through the vDSO (~20 ns), cheap enough to call once per event.
inline Nanos now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<Nanos>(ts.tv_sec) * kNanosPerSecond + ts.tv_nsec;
}

}  // namespace knit_load

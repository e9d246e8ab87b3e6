// Cache-line size and a padded wrapper, so hot atomics written by different threads never share a
// line.
#pragma once

#include <cstddef>

namespace knit::detail {

// 64 bytes on every x86-64 and most ARMv8 parts. std::hardware_destructive_interference_size
// would say the same but g++ warns that its value is ABI-unstable, so we pin it here.
inline constexpr std::size_t kCacheLine = 64;

template <class T>
struct alignas(kCacheLine) padded {
  T value{};
};

}  // namespace knit::detail

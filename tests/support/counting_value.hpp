// counting_value: a value type that counts live instances, so a test can prove that rings,
// pools and shutdown neither leak nor destroy anything twice.
#pragma once

#include <atomic>
#include <cstdint>
#include <stdexcept>

namespace knit_test {

struct counting_value {
  static inline std::atomic<long> live{0};
  std::uint64_t value = 0;
  bool moved_from = false;

  counting_value() noexcept { live.fetch_add(1); }
  explicit counting_value(std::uint64_t v) noexcept : value(v) { live.fetch_add(1); }
  counting_value(const counting_value& o) noexcept : value(o.value) { live.fetch_add(1); }
  counting_value(counting_value&& o) noexcept : value(o.value) {
    o.moved_from = true;
    live.fetch_add(1);
  }
  counting_value& operator=(const counting_value&) = default;
  counting_value& operator=(counting_value&& o) noexcept {
    value = o.value;
    o.moved_from = true;
    return *this;
  }
  ~counting_value() {
    if (live.fetch_sub(1) <= 0) std::abort();  // destroyed more often than constructed
  }
};

}  // namespace knit_test

// Cost emulation: burn the calling thread's CPU for a set time with real, unoptimisable work.
#include <time.h>

#include "routes.hpp"

namespace knit_server::routes {

std::uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t burn_cpu_until(std::uint64_t thread_cpu_start_ns, std::uint32_t cost_us) {
  const std::uint64_t deadline = thread_cpu_start_ns + std::uint64_t{cost_us} * 1000;
  // A 64-bit mix (splitmix64 step): each iteration depends on the last, so the compiler can
  // neither vectorise nor drop it. 512 rounds are about 1-2 us on current x86, so the clock
  // (a real syscall for this clock id, ~100-300 ns) costs a small share and overshoot stays
  // within a couple of microseconds.
  constexpr int kRoundsPerCheck = 512;
  std::uint64_t state = thread_cpu_start_ns ^ 0x9E3779B97F4A7C15ULL;
  while (thread_cpu_ns() < deadline) {
    for (int i = 0; i < kRoundsPerCheck; ++i) {
      state += 0x9E3779B97F4A7C15ULL;
      std::uint64_t z = state;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      state ^= z ^ (z >> 31);
    }
  }
  return state;
}

}  // namespace knit_server::routes

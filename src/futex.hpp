// Thin futex wrappers: the only place that makes futex system calls; EINTR/EAGAIN end here.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <ctime>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace knit::detail {

enum class futex_result { woken, timed_out, value_changed, interrupted };

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t),
              "futex word must be 32 bits");

// Sleeps while *word == expected. timeout_ms == 0 means no timeout. Private futex: the
// word is never shared across processes.
inline futex_result futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                               unsigned timeout_ms) noexcept {
  timespec ts{};
  timespec* tsp = nullptr;
  if (timeout_ms > 0) {
    ts.tv_sec = timeout_ms / 1000;
    ts.tv_nsec = static_cast<long>(timeout_ms % 1000) * 1'000'000L;
    tsp = &ts;
  }
  const long rc = ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE,
                            expected, tsp, nullptr, 0);
  if (rc == 0) return futex_result::woken;  // may still be spurious: callers re-check the word
  switch (errno) {
    case ETIMEDOUT: return futex_result::timed_out;
    case EAGAIN: return futex_result::value_changed;
    default: return futex_result::interrupted;  // EINTR
  }
}

inline void futex_wake(std::atomic<std::uint32_t>& word, int count) noexcept {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, count, nullptr,
            nullptr, 0);
}

}  // namespace knit::detail

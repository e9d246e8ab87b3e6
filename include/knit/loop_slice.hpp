// loop_slice: an event-loop thread asks the kernel for a short time slice, so that when it
// wakes on a CPU where a worker is running it preempts the worker at once.
#pragma once

#include <chrono>
#include <cstdint>

#include "knit/export.hpp"

namespace knit {

/// @brief What request_loop_slice() has done in this process, for a log or a banner.
struct loop_slice_status {
  std::uint64_t applied = 0;  ///< threads that got the slice they asked for
  std::uint64_t refused = 0;  ///< threads whose request failed (they keep the default slice)
  int first_error = 0;        ///< errno of the first refusal (0: none)
  std::chrono::microseconds slice{0};  ///< the slice last asked for
};

/// @brief The slice the server's loops ask for: short enough that a woken loop's virtual
/// deadline comes before a running worker's (the default slice is ~0.75 ms x (1 + log2 CPUs)),
/// long enough to answer a burst of requests between preemptions.
inline constexpr std::chrono::microseconds default_loop_slice{200};

/// @brief Gives the calling thread a custom time slice (sched_setattr, SCHED_OTHER or
/// SCHED_BATCH kept, nice kept, sched_runtime = `slice`; the kernel clamps it to 0.1–100 ms).
///
/// Linux 6.12+ (EEVDF's custom slices): a task with a shorter slice has an earlier virtual
/// deadline, so on waking it preempts a running task with a longer one (PREEMPT_SHORT) instead
/// of waiting out that task's slice. Unprivileged. Nothing calls it unless asked: the pool
/// never does, knit-server does on its loop threads when KNIT_HEAVY_SHARE is on.
/// @return 0, or the errno of the refusal: ENOSYS or EPERM (a seccomp filter), EINVAL (a
/// real-time or deadline thread), ENOTSUP (a kernel that accepted the call but keeps no custom
/// slice: before 6.12). A refusal changes nothing and is counted in loop_slice_now().
KNIT_API int request_loop_slice(std::chrono::microseconds slice = default_loop_slice) noexcept;

/// @brief The calling thread's slice as the kernel reports it (sched_getattr's sched_runtime:
/// on 6.12+ the custom slice, or the default one when none was set; 0 before 6.12, or when the
/// call is refused).
KNIT_API std::chrono::microseconds current_loop_slice() noexcept;

/// @brief Counts of request_loop_slice() so far in this process.
KNIT_API loop_slice_status loop_slice_now() noexcept;

}  // namespace knit

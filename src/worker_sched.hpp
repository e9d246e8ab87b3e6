// worker_sched: a worker thread puts itself in the scheduling class and nice value the pool
// was given (pool_options::worker_sched, worker_nice, or the nice heavy_share gives:
// heavy_share.hpp), so workers can yield the CPU to the host when both want it.
//
// Linux keeps both per thread: sched_setscheduler(0, ...) and
// setpriority(PRIO_PROCESS, gettid(), ...) change the calling thread only, which is why
// each worker applies them to itself as it starts (replacement workers included; a new
// thread inherits its creator's, i.e. the host's, settings). "other" and nice 0 change
// nothing. Raising nice and entering SCHED_BATCH or SCHED_IDLE need no privilege; a nice
// below the thread's current one, or leaving SCHED_IDLE, needs CAP_SYS_NICE or RLIMIT_NICE
// (EPERM otherwise), and a seccomp filter may refuse either.
#pragma once

#include <cstddef>

#include "knit/options.hpp"

namespace knit::detail {

struct worker_sched_error {
  int error = 0;                  // errno of the call that failed; 0 = applied
  const char* setting = nullptr;  // "worker_sched", "worker_nice" or "heavy_share"

  // "worker 3 could not apply worker_nice=5 (KNIT_WORKER_NICE): Permission denied (...)",
  // into `out` (no allocation: a worker thread's start is noexcept).
  void format(char* out, std::size_t size, const pool_options& options,
              unsigned worker) const noexcept;
};

// Whether the options ask a worker to change anything.
bool worker_sched_requested(const pool_options& options) noexcept;

// Applies worker_sched, then worker_nice (or heavy_share's nice step when worker_nice is 0),
// to the calling thread; stops at the first failure.
worker_sched_error apply_worker_sched(const pool_options& options) noexcept;

// Puts the calling thread back on the kernel's default slice if this process has asked for a
// loop slice (knit::request_loop_slice): a thread inherits its creator's, so a worker started
// from a loop thread (a replacement or lent one) has it. 0 or the errno of the refusal.
// In src/loop_slice.cpp.
int drop_inherited_loop_slice() noexcept;

}  // namespace knit::detail

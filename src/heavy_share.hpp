// heavy_share: the policy that turns pool_options::heavy_share (the share of a CPU heavy work
// keeps when a worker and an event loop both want it) into the nice value a worker gives
// itself, and the mechanism that applies it to threads and worker processes.
//
// Why nice: Linux's fair scheduler (EEVDF) lets a woken task preempt the running one only if
// the woken task is eligible (it has not used more than its weighted share) and its virtual
// deadline comes first. A loop that shares a CPU with a saturated worker of equal weight
// uses more than its half and is not eligible: it waits out the worker's slice (~1.5 ms on
// 2 CPUs). Giving the worker a lower weight (a higher nice) keeps the loop eligible up to
// 1024 / (w + 1024) of the CPU, and leaves the worker w / (w + 1024) when both saturate;
// the loop's short slice (knit/loop_slice.hpp) makes its deadline come first.
//
// The weights are the kernel's sched_prio_to_weight (kernel/sched/core.c): nice 0 = 1024,
// each step up divides by about 1.25. Raising a thread's nice needs no privilege.
#pragma once

#include <array>
#include <cstddef>

#include "knit/options.hpp"

namespace knit::detail {

// sched_prio_to_weight for nice 0..19.
inline constexpr std::array<int, 20> nice_weight = {
    1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15};

// The share, in percent, a thread at `nice` keeps against `loops` threads at nice 0 when all
// want the CPU.
constexpr double share_of_nice(int nice, unsigned loops) noexcept {
  const double w = nice_weight[static_cast<std::size_t>(nice)];
  return 100.0 * w / (w + 1024.0 * loops);
}

// The nice step (0..19, added to the nice the worker inherits) whose share against `loops`
// loops is nearest `share` percent. 0 and 100 (and a share at or above an equal split,
// which only a negative nice could give) change nothing: 0.
constexpr int nice_for_share(unsigned share, unsigned loops = 1) noexcept {
  if (share == 0 || share >= 100 || loops == 0) return 0;
  int best = 0;
  double best_gap = 1e9;
  for (int n = 0; n < static_cast<int>(nice_weight.size()); ++n) {
    const double d = share_of_nice(n, loops) - static_cast<double>(share);
    const double gap = d < 0 ? -d : d;
    if (gap < best_gap) {
      best_gap = gap;
      best = n;
    }
  }
  return best;
}

// The absolute nice a worker (thread or process) started now by the calling thread should
// have: an explicit worker_nice wins; else the heavy_share step on top of `inherited` (the
// nice of the thread that starts it), at most 19; else `inherited` (nothing to change).
constexpr int worker_nice_for(const pool_options& options, int inherited) noexcept {
  if (options.worker_nice != 0) return options.worker_nice;
  const int n = inherited + nice_for_share(options.heavy_share);
  return n > 19 ? 19 : n;
}

// The calling thread's nice (getpriority on its tid; Linux keeps nice per thread).
int current_thread_nice() noexcept;

// The process options a pool's worker processes are started with: process_options::nice,
// when left 0, from worker_nice or heavy_share as for the pool's threads.
process_options process_options_of(const pool_options& options);

// Gives the started worker process `pid` the nice `nice` from the parent (setpriority on its
// pid), so the child's seccomp filter need not allow it. Returns 0 or errno.
int apply_child_nice(int pid, int nice) noexcept;

}  // namespace knit::detail

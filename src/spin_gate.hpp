// spin_gate: may an idle worker spin at all? Only if the spinner can have a CPU of its own.
//
// Rule (Go's runtime spins only with an idle P and more than one CPU):
//   threads that want a CPU = the host + every worker;
//   usable CPUs            = the CPUs in the host thread's affinity mask at construction,
//                            plus each pinned worker's CPU (pool_options::worker_cpus);
//   spin only if            threads that want a CPU <= usable CPUs.
// A spinner that shares its CPU with the host can never catch a call the host has not had
// the CPU to submit: it only delays the host (measured on a 2-vCPU VM with host and worker
// on one CPU: the default 50 µs spin cost ~4 µs of CPU per pooled call, ~20% more CPU than
// the same work without the spin).
//
// Counted once, at construction. If the mask changes later (taskset -p, a cpuset move) the
// gate keeps its first answer: a pool that started on one CPU and is widened behaves like
// spin_us = 0 (correct, one FUTEX_WAKE per call); one that started wide and is narrowed
// keeps spinning, but its spins then miss and the miss backoff (spin_backoff.hpp) stops
// them. CPU quotas (cgroup cpu.max) are not affinity and are not seen here.
#pragma once

#include <span>
#include <vector>

#include "knit/options.hpp"

namespace knit::detail {

// The rule itself: `workers` spinning or running while the host runs, on `usable_cpus`.
constexpr bool spin_has_own_cpu(unsigned usable_cpus, unsigned workers) noexcept {
  return usable_cpus >= workers + 1u;
}

// Distinct CPUs in the host's mask and the pinned workers' CPUs (worker i runs on
// worker_cpus[i % size], so only the first `threads` entries count). Unpinned workers
// inherit the host's mask, which is already counted.
unsigned usable_cpu_count(std::span<const int> host_cpus, std::span<const int> worker_cpus,
                          unsigned threads);

// The calling thread's affinity mask as a CPU list; empty if it cannot be read (then the
// gate assumes every online CPU is usable).
std::vector<int> calling_thread_cpus();

// Reads the inputs on the calling (host) thread and applies the rule to `options`.
bool host_leaves_a_cpu_for_spinning(const pool_options& options);

}  // namespace knit::detail

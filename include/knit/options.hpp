// pool_options: pool shape and worker idle policy; from_env() reads the KNIT_* variables.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "knit/error.hpp"

namespace knit {

struct pool_options {
  // Worker threads. The host (the thread that owns the pool) is not counted.
  unsigned threads = 1;

  // Spin budget of an idle worker before it parks, in microseconds. Unset = the seed
  // report's policy: 50 µs with one worker (it is the critical path), 0 with two or more
  // (a peer is already awake). See idle_policy.hpp.
  std::optional<unsigned> spin_us;

  // Park timeout in ms. 0 = park until woken (no timed wake-ups at all when idle).
  // A positive value also wakes parked workers every park_ms (the seed's old behaviour).
  unsigned park_ms = 0;

  // Host -> worker doorbell. Off = nobody wakes a parked worker: it finds work only at its
  // park timeout (the seed's KNIT_DOORBELL=0). Requires park_ms > 0.
  bool doorbell = true;

  // An awake worker with an empty ring takes queued calls from a peer's ring.
  bool steal = true;

  // Most workers allowed to spin at once; 0 = no cap. With a cap of 1 and a spin budget,
  // a spinner that catches work hands the spinning role to a parked peer (Go's wakep), so
  // the host rarely pays for a wake-up. See idle_policy.hpp.
  unsigned max_spinners = 0;

  // What waking a parked worker is assumed to cost, in µs (its wake-up latency plus the
  // waker's CPU; 12-47 µs + 10-16 µs on the VMs this was built on, see limits.md). The host
  // queues a call behind a busy worker instead of waking a parked one only when that worker
  // is expected to be free sooner than this. 0 = never queue behind a busy worker.
  unsigned wake_cost_us = 50;

  // Slots per worker ring (rounded up to a power of two). Calls beyond it wait in the
  // host-side backlog, never dropped.
  std::size_t queue_capacity = 1024;

  // Most calls accepted but not yet completed (backlog + rings + running); 0 = no limit.
  // At the limit submit() fails at once with errc::queue_full.
  std::size_t max_pending = 0;

  // A call running longer than this is declared stuck: its handler gets errc::stuck (or
  // errc::timed_out if its own deadline passed) at once, its worker is retired and a fresh
  // thread takes the worker's place (pool.cpp, "Retiring a worker"). zero = never. A call
  // may set its own (call_options::stuck_after). from_env() defaults it to 30 s.
  std::chrono::milliseconds stuck_after{0};

  // The deadline the destructor gives shutdown(drain, now + stop_timeout) when shutdown()
  // was not called: calls not started by then are cancelled, running ones abandoned and
  // their threads detached. zero = wait for every call (the old, unbounded behaviour).
  std::chrono::milliseconds stop_timeout{10'000};

  // Optional CPU affinity: worker i is pinned to worker_cpus[i % size]. Empty = no pinning.
  std::vector<int> worker_cpus;

  // The spin budget this configuration actually uses (resolves the unset default).
  unsigned effective_spin_us() const noexcept {
    return spin_us ? *spin_us : (threads == 1 ? 50u : 0u);
  }

  // Throws config_error naming the bad setting.
  void validate() const;

  // Reads KNIT_THREADS, KNIT_SPIN, KNIT_PARK, KNIT_DOORBELL, KNIT_STEAL, KNIT_MAX_SPINNERS,
  // KNIT_WAKE_COST (µs), KNIT_QUEUE_CAPACITY, KNIT_MAX_PENDING, KNIT_WORKER_CPUS ("0,2,4-7"),
  // KNIT_STUCK_MS (unset: 30000; 0 = never) and KNIT_STOP_TIMEOUT_MS (unset: 10000; 0 = no
  // bound). Unset or empty = default. Throws config_error on any malformed or out-of-range value.
  static pool_options from_env();

  // One line, e.g. "threads=4 spin_us=0 park_ms=0 doorbell=on steal=on max_spinners=0 ...".
  std::string describe() const;
};

// Parses "0,2,4-7" into {0,2,4,5,6,7}; throws config_error mentioning `what` on bad input.
std::vector<int> parse_cpu_list(const std::string& text, const char* what);

}  // namespace knit

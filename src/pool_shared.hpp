// pool_shared: the state the host and the workers share: per-worker rings, doorbells and
// counters, the host doorbell, the idle policy and the stop flag.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "host_doorbell.hpp"
#include "idle_policy.hpp"
#include "knit/call.hpp"
#include "knit/detail/cache_line.hpp"
#include "knit/job_ring.hpp"
#include "knit/options.hpp"
#include "knit/spsc_ring.hpp"
#include "knit/stats.hpp"
#include "worker_doorbell.hpp"

namespace knit::detail {

// A counter written by one thread only: a relaxed load + store, no locked instruction.
struct counter {
  std::atomic<std::uint64_t> value{0};
  void bump() noexcept { value.store(value.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
  std::uint64_t get() const noexcept { return value.load(std::memory_order_relaxed); }
};

struct alignas(kCacheLine) worker_counters {
  counter calls_run, calls_stolen, calls_skipped, spin_hits, spins, parks, wakes_doorbell,
      wakes_timeout, peer_wakes, completion_signals;
  worker_stats snapshot() const noexcept;
};

struct worker_slot {
  worker_slot(std::size_t job_capacity, std::size_t done_capacity)
      : jobs(job_capacity), done(done_capacity) {}
  job_ring<call_base*> jobs;   // host -> worker (and thieves)
  spsc_ring<call_base*> done;  // this worker -> host
  worker_doorbell bell;
  worker_counters counters;
  // steady_clock ns when the worker started its current call; 0 when it is between calls.
  // Written by the worker only (relaxed: a hint for dispatch, like the state word).
  alignas(kCacheLine) std::atomic<std::int64_t> call_started_ns{0};
  std::thread thread;
};

inline std::int64_t steady_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct pool_shared {
  pool_shared(const pool_options& o)
      : options(o), policy(o.effective_spin_us(), o.max_spinners) {}

  const pool_options options;
  idle_policy policy;
  host_doorbell host_bell;
  std::vector<std::unique_ptr<worker_slot>> workers;
  // Set by the host once every record has come back (shutdown step 4); read by workers
  // after their park fence, so a stop is never missed.
  alignas(kCacheLine) std::atomic<bool> stopping{false};
};

// The worker thread's body (worker.cpp).
void worker_main(pool_shared& shared, unsigned self) noexcept;

}  // namespace knit::detail

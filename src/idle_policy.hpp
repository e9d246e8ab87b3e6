// idle_policy: what an idle worker does before it parks: how long it may spin, and whether
// it may spin at all (the spinner cap). Decisions only; no system calls, no clocks.
//
// Policies this expresses (pool_options):
//   the default policy: spin 50 µs with one worker, none with two or more, no cap;
//   old default (the reference server's timer policy): spin N*50 µs + park 1 ms, no cap;
//   single spinner: spin S µs, max_spinners = 1; a spinner that catches work hands the
//     spinning role to a parked peer (Go's wakep / Eigen's spinning_ flag), so under a
//     steady stream one worker is usually awake to catch the next call and the host rarely
//     pays a FUTEX_WAKE. Idle cost is bounded by one spinner for one budget, then zero.
//
// The spin gate (pool_options::spin_gate; on for the default budget, off for an explicit
// spin_us) adds two conditions: no spinning at all when the spinner would share a CPU with
// the host (spin_gate.hpp, decided once by the pool), and each worker's miss backoff
// (spin_backoff.hpp, decided per idle period by the worker), and a budget each worker
// stretches to its stream's gaps (spin_budget.hpp: up to twice spin_budget_ns()).
#pragma once

#include <atomic>
#include <cstdint>

#include "knit/detail/cache_line.hpp"

namespace knit::detail {

class idle_policy {
 public:
  // gated: the spin gate applies; own_cpu: spin_gate.hpp's answer for this pool.
  idle_policy(unsigned spin_us, unsigned max_spinners, bool gated = false,
              bool own_cpu = true) noexcept
      : spin_ns_(std::uint64_t{spin_us} * 1000),
        max_spinners_(max_spinners),
        gated_(gated),
        cpu_shared_(gated && !own_cpu) {}

  std::uint64_t spin_budget_ns() const noexcept { return spin_ns_; }

  // The gate is on and a spinner would share the host's CPU: park at once, always.
  bool cpu_shared() const noexcept { return cpu_shared_; }

  // The gate is on: each worker backs off after a run of missed spins.
  bool backs_off_after_misses() const noexcept { return gated_; }

  // Takes a spinning token. False: the budget is zero or the cap is reached -> park now.
  bool try_begin_spin() noexcept {
    if (spin_ns_ == 0) return false;
    if (max_spinners_ == 0) {
      spinners_.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    unsigned n = spinners_.load(std::memory_order_relaxed);
    while (n < max_spinners_) {
      // relaxed: the count is a throttle, not a publication; correctness never depends on it.
      if (spinners_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) return true;
    }
    return false;
  }

  void end_spin() noexcept { spinners_.fetch_sub(1, std::memory_order_relaxed); }

  unsigned spinners() const noexcept { return spinners_.load(std::memory_order_relaxed); }

  // After a spinner caught work: should it wake a parked peer to take over spinning?
  // Only under a spinner cap (the single-spinner policy), and only if nobody else spins.
  bool hand_off_after_catch() const noexcept { return max_spinners_ > 0 && spinners() == 0; }

 private:
  const std::uint64_t spin_ns_;
  const unsigned max_spinners_;
  const bool gated_;
  const bool cpu_shared_;
  // Workers currently spinning. Writers: the workers (try_begin_spin, end_spin); partners:
  // the other workers' relaxed loads (spinners(), the cap). A throttle, not a publication.
  alignas(kCacheLine) std::atomic<unsigned> spinners_{0};
};

}  // namespace knit::detail

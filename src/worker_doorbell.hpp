// worker_doorbell: one worker's state word (running / spinning / parked) and its futex.
//
// Protocol (no lost wake-up, no timed polling)
//   worker, going to sleep:           ringer (host or peer), after publishing work:
//     state = parked                    fence(seq_cst)            // pairs with the worker's
//     fence(seq_cst)                    if state == parked &&     // fence: Dekker point
//     re-check for work / stop            CAS parked -> running:
//       found: CAS parked -> running        FUTEX_WAKE(state, 1)
//     FUTEX_WAIT(state, parked)
// Guarantee: either the worker's re-check sees the work, or the ringer sees `parked` and
// wakes it. Only the CAS winner issues FUTEX_WAKE, so a parked worker costs at most one
// syscall per wake, and a running or spinning one costs none.
// State word: 0 running, 1 spinning, 2 parked. The worker writes running/spinning/parked;
// ringers write only parked -> running (CAS). So while the word is not parked only its
// worker can change it, which the worker's moves check (KNIT_ASSERT, invariant.hpp).
#pragma once

#include <atomic>
#include <cstdint>

#include "futex.hpp"
#include "invariant.hpp"
#include "knit/detail/cache_line.hpp"

namespace knit::detail {

enum class worker_state : std::uint32_t { running = 0, spinning = 1, parked = 2 };

enum class park_end { doorbell, timeout };

class alignas(kCacheLine) worker_doorbell {
 public:
  // Anyone: a hint for dispatch decisions (relaxed; the Dekker fence makes wakes safe).
  worker_state state() const noexcept {
    return static_cast<worker_state>(word_.load(std::memory_order_relaxed));
  }

  // Worker only: running -> spinning -> running around a spin (ringers never touch it).
  void set_running() noexcept {
    KNIT_ASSERT(state() == worker_state::spinning);
    store(worker_state::running);
  }
  void set_spinning() noexcept {
    KNIT_ASSERT(state() != worker_state::parked);
    store(worker_state::spinning);
  }

  // Worker only: announce the park. The caller must re-check for work after this returns.
  void announce_park() noexcept {
    KNIT_ASSERT(state() != worker_state::parked);  // one park at a time
    store(worker_state::parked);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with the ringer's fence
  }

  // Worker only: the re-check found work; leave the parked state. Returns false if a ringer
  // already moved us to running (its FUTEX_WAKE will then find nobody: harmless).
  // Partner: a ringer's CAS in wake_if_parked (one of the two wins).
  bool cancel_park() noexcept {
    std::uint32_t expected = static_cast<std::uint32_t>(worker_state::parked);
    const bool won = word_.compare_exchange_strong(
        expected, static_cast<std::uint32_t>(worker_state::running), std::memory_order_acq_rel);
    KNIT_ASSERT(won || expected == static_cast<std::uint32_t>(worker_state::running));
    return won;
  }

  // Worker only: sleep until rung (or until timeout_ms passes, if non-zero). Returns why it
  // woke; on return the state is running either way.
  park_end wait(unsigned timeout_ms) noexcept {
    for (;;) {
      const futex_result r =
          futex_wait(word_, static_cast<std::uint32_t>(worker_state::parked), timeout_ms);
      if (state() != worker_state::parked) {  // a ringer CAS'd us
        KNIT_ASSERT(state() == worker_state::running);
        return park_end::doorbell;
      }
      if (r == futex_result::timed_out) {
        // Consider: a ringer CASes parked -> running right after our timeout. Then our CAS
        // fails and it was a doorbell wake after all (its FUTEX_WAKE finds nobody).
        return cancel_park() ? park_end::timeout : park_end::doorbell;
      }
      // Spurious wake or EINTR with the state still parked: sleep again.
    }
  }

  // Ringer (host or peer), called after publishing work and issuing a seq_cst fence.
  // Returns true if it issued FUTEX_WAKE (the caller counts it). Partners: the worker's
  // store of parked before its fence (announce_park), and the CAS of another ringer or of
  // the worker itself (cancel_park, wait's timeout): one of them wins.
  bool wake_if_parked() noexcept {
    std::uint32_t expected = static_cast<std::uint32_t>(worker_state::parked);
    if (word_.load(std::memory_order_relaxed) != expected) return false;
    const auto running = static_cast<std::uint32_t>(worker_state::running);
    if (!word_.compare_exchange_strong(expected, running, std::memory_order_acq_rel)) {
      return false;  // someone else won the CAS and wakes it
    }
    futex_wake(word_, 1);
    return true;
  }

 private:
  void store(worker_state s) noexcept {
    word_.store(static_cast<std::uint32_t>(s), std::memory_order_relaxed);  // the worker only
  }

  // Writers: the worker (every state, by store, and parked -> running by CAS) and the
  // ringers (parked -> running by CAS only). Partners: the ringers' load and CAS in
  // wake_if_parked, and dispatch's relaxed state() (a hint).
  std::atomic<std::uint32_t> word_{static_cast<std::uint32_t>(worker_state::running)};
};

}  // namespace knit::detail

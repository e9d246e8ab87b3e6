// worker: one worker thread's loop: claim a call (the hosts' rings into its seat in turn,
// then its peers' when stealing), run it, hand the record back to its host, and when there
// is nothing to do, spin within the idle policy's budget and then park on its doorbell.
//
// With the spin gate on (idle_policy.hpp) an idle period may not spin: never when the
// spinner would share the host's CPU (spin_gate.hpp), and not while this worker's miss
// backoff says its recent spins caught nothing (spin_backoff.hpp). A skipped period that
// would have caught a call (work seen before parking, or a doorbell within the budget)
// resets the backoff, so a stream that resumes gets its spinner back at once. The gate's
// budget also stretches to the gaps of a stream whose calls come a little further apart
// than it (spin_budget.hpp: up to twice the base), so that stream keeps its spinner.
//
// Retirement (worker_seats.cpp, "Retiring a worker"): if the call's host declared it stuck,
// this worker's CAS running -> done fails. It then touches nothing but its own slot and
// that record: it hands the record over through the slot's handoff flag (destroying it
// itself if the pool already gave it up) and the thread ends.
//
// A lent worker (lent_workers.cpp) has no seat: it claims from every seat's rings, never
// spins or parks, and ends when it finds nothing (its leaving re-check, run_lent).
#include <bit>
#include <cstdio>
#include <memory>
#include <thread>

#include <pthread.h>
#include <sched.h>

#include "call_allocator.hpp"
#include "call_state.hpp"
#include "fault_injection.hpp"
#include "host_state.hpp"
#include "invariant.hpp"
#include "log_line.hpp"
#include "pool_shared.hpp"
#include "spin_backoff.hpp"
#include "spin_budget.hpp"
#include "worker_sched.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KNIT_CPU_RELAX() _mm_pause()
#else
#define KNIT_CPU_RELAX() ((void)0)
#endif

namespace knit::detail {
namespace {

class worker_loop {
 public:
  worker_loop(pool_shared& shared, worker_slot& me, unsigned self)
      : s_(shared),
        self_(self),
        me_(me),
        n_(shared.seat_count),
        lent_(self >= shared.seat_count),
        steal_(shared.options.steal && n_ > 1 && !lent_),
        doorbell_(shared.options.doorbell) {}

  // A lent worker's loop ("Leaving" in lent_workers.cpp): every call it can claim, then
  // leaving, a fence and a re-check of every ring; it ends only when that finds none.
  void run_lent() noexcept {
    for (;;) {
      call_base* c = nullptr;
      unsigned from = 0;
      if (claim_any(c, from)) {
        if (!execute(c, true, from)) return;  // retired for a stuck call
        continue;
      }
      chain_ns_ = 0;
      at_interleaving_point(interleaving_point::lent_found_nothing);
      me_.phase.store(worker_slot::lent_phase::leaving, std::memory_order_relaxed);
      at_interleaving_point(interleaving_point::lent_leaving);
      // Partner: the host's fence between its pushes and its loads of the phases
      // (lent_workers.cpp, lend_if_starved): it sees leaving, or this re-check sees its push.
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (any_work()) {
        me_.phase.store(worker_slot::lent_phase::working, std::memory_order_relaxed);
        continue;
      }
      s_.lent_retired_idle.fetch_add(1, std::memory_order_relaxed);
      // Partner: the pool's acquire load before it joins this thread and reuses the slot.
      me_.phase.store(worker_slot::lent_phase::idle, std::memory_order_release);
      return;
    }
  }

  void run() noexcept {
    for (;;) {
      call_base* c = nullptr;
      bool stolen = false;
      unsigned from = 0;
      if (claim(c, stolen, from)) {
        if (!execute(c, stolen, from)) return;  // retired: the seat has a new worker
        continue;
      }
      chain_ns_ = 0;  // what follows (spin, park) is not the hand-off's gap
      // Partner: the host's release store in stop_workers (worker_seats.cpp).
      if (s_.stopping.load(std::memory_order_acquire)) {
        // The pool sets stopping only after every record came back, so the rings are empty.
        KNIT_ASSERT(!work_in(self_));
        return;
      }
      if (spin(c, stolen, from)) {
        if (!execute(c, stolen, from)) return;
        continue;
      }
      learn_from(park());
    }
  }

 private:
  // A lent worker's claim: every seat's rings, from the seat after the one served last.
  bool claim_any(call_base*& c, unsigned& from) noexcept {
    for (unsigned k = 0; k < n_; ++k) {
      const unsigned j = (cursor_ + 1 + k) % n_;
      if (pop_from_seat(j, c, from)) {
        cursor_ = j;
        return true;
      }
    }
    return false;
  }

  // One call from any host's ring into seat j, as a thief takes it (lent workers, stealing).
  // Acquire pairs with the hosts' fetch_or: host h's state (published when its index was
  // first used) is visible before we touch its ring. A set bit is re-checked on the ring.
  bool pop_from_seat(unsigned j, call_base*& c, unsigned& from) noexcept {
    const std::uint64_t theirs = s_.seat_pending[j].hosts.load(std::memory_order_acquire);
    for (std::uint64_t m = theirs; m != 0; m &= m - 1) {
      const unsigned h = static_cast<unsigned>(std::countr_zero(m));
      if (s_.host(h)->ring(j).try_pop(c)) {
        from = h;
        return true;
      }
    }
    return false;
  }

  bool any_work() const noexcept {
    for (unsigned j = 0; j < n_; ++j) {
      if (work_in(j)) return true;
    }
    return false;
  }

  // The hosts' rings into this seat first (each FIFO, served in turn), then one pass over
  // the peers' seats. `from` names the host the record goes back to.
  bool claim(call_base*& c, bool& stolen, unsigned& from) noexcept {
    stolen = false;
    // Acquire pairs with the hosts' fetch_or: host h's state (published when its index was
    // first used) is visible before we touch its ring. A set bit is re-checked on the ring.
    const std::uint64_t mine = my_hosts_.load(std::memory_order_acquire);
    if (mine != 0 && claim_in_turn(mine, c, from)) return true;
    if (!steal_) return false;
    for (unsigned k = 1; k < n_; ++k) {
      if (pop_from_seat((self_ + k) % n_, c, from)) {
        stolen = true;
        return true;
      }
    }
    return false;
  }

  // The rings the seat's mask names, round robin from the one after the last served: H
  // hosts with work here get one call each in turn. A ring found empty keeps its bit here:
  // the bits are cleared only on the way to parking (clear_empty_rings), so a host pushing
  // to a worker that is running or spinning finds its bit set and pays no RMW.
  bool claim_in_turn(std::uint64_t hosts, call_base*& c, unsigned& from) noexcept {
    const std::uint64_t after = cursor_ >= 63 ? 0 : (~std::uint64_t{0} << (cursor_ + 1));
    for (const std::uint64_t order : {hosts & after, hosts & ~after}) {
      for (std::uint64_t m = order; m != 0; m &= m - 1) {
        const unsigned h = static_cast<unsigned>(std::countr_zero(m));
        if (s_.host(h)->ring(self_).try_pop(c)) {
          cursor_ = h;
          from = h;
          return true;
        }
      }
    }
    return false;
  }

  // Before parking: every ring of this seat found empty loses its bit: fetch_and, fence,
  // re-check, and the bit back if the ring filled meanwhile (host_state.hpp, guarantee 1;
  // partner: the host's fence and mask load after its push in host_state::dispatch).
  void clear_empty_rings() noexcept {
    const std::uint64_t mine = my_hosts_.load(std::memory_order_acquire);
    for (std::uint64_t m = mine; m != 0; m &= m - 1) {
      const unsigned h = static_cast<unsigned>(std::countr_zero(m));
      job_ring<call_base*>& ring = s_.host(h)->ring(self_);
      if (!ring.empty_approx()) continue;
      at_interleaving_point(interleaving_point::ring_found_empty);
      const std::uint64_t bit = std::uint64_t{1} << h;
      my_hosts_.fetch_and(~bit, std::memory_order_acq_rel);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (!ring.empty_approx()) my_hosts_.fetch_or(bit, std::memory_order_acq_rel);
    }
  }

  // Work this worker could claim now.
  bool work_visible() noexcept {
    if (work_in(self_)) return true;
    if (!steal_) return false;
    for (unsigned k = 1; k < n_; ++k) {
      if (work_in((self_ + k) % n_)) return true;
    }
    return false;
  }

  // Some host's ring into seat j holds a call. Its bit may be stale; the ring itself
  // decides, so a stale bit never keeps a worker from parking.
  bool work_in(unsigned j) const noexcept {
    const std::uint64_t hosts = s_.seat_pending[j].hosts.load(std::memory_order_acquire);
    for (std::uint64_t m = hosts; m != 0; m &= m - 1) {
      const unsigned h = static_cast<unsigned>(std::countr_zero(m));
      if (!s_.host(h)->ring(j).empty_approx()) return true;
    }
    return false;
  }

  // Calls queued into this seat behind the one just claimed: the rings its mask names (a
  // bit stays set until this worker parks, so the ring decides, not the bit).
  bool more_queued_here() const noexcept { return work_in(self_); }

  // Returns false if the host retired this worker while the call ran (the thread must end).
  bool execute(call_base* c, bool stolen, unsigned from) noexcept {
    after_call_ = true;  // the idle period after it begins at a call's end (learn_from)
    // More work is queued behind this call: if nobody is spinning to catch it, wake a
    // parked peer to steal it, so the host never has to pay that wake-up.
    if (!lent_ && steal_ && doorbell_ && s_.policy.spinners() == 0 && more_queued_here()) {
      wake_one_peer();
      chain_ns_ = 0;  // a system call came between
    }
    // Until the stamp below, the host may queue a call behind this one: if this call runs
    // long, the host's drain wakes a sleeping peer for it (lent_workers.cpp, "Held calls").
    at_interleaving_point(interleaving_point::claimed_not_started);

    // The record's two lines are asked for as ours now, and the clock is read while they
    // come (the CAS would wait for its line before the read could start).
    ask_for_record(c);
    const std::int64_t started = chain_ns_ != 0 ? chain_ns_ : steady_now_ns();
    const bool claimed = try_move(*c, call_state::queued, call_state::running);
    // A spin's catch left the state word at spinning (only this worker writes it then): it
    // says running from here, after that CAS, not before it: a locked instruction waits
    // for every store before it, and this one's line is in the host's cache (its wake check).
    if (me_.bell.state() == worker_state::spinning) me_.bell.set_running();
    if (claimed) {
      me_.counters.calls_run.bump();
      if (stolen) me_.counters.calls_stolen.bump();
      me_.call_started_ns.store(started, std::memory_order_relaxed);
      // Published for host `from`'s stuck detection, in its own entry: only that host ever
      // dereferences it (stuck_scan.hpp).
      me_.current_of[from].store(c, std::memory_order_release);
      c->run();
      const std::int64_t finished = steady_now_ns();
      c->run_ns = static_cast<std::uint64_t>(finished - started);
      chain_ns_ = finished;
      if (!try_move(*c, call_state::running, call_state::done)) {
        hand_over_stuck(c);  // it is stuck: its host retired us
        return false;
      }
      me_.current_of[from].store(nullptr, std::memory_order_relaxed);  // published below
      me_.call_started_ns.store(0, std::memory_order_relaxed);
    } else {
      me_.counters.calls_skipped.bump();  // abandoned by the host: hand it back unrun
      chain_ns_ = 0;
    }
    // Host `from`'s done ring from this seat (a call from our own ring) or its list, and
    // its eventfd (host_state.hpp, "Completions"). A lent worker's calls are all stolen.
    KNIT_ASSERT(stolen || !lent_);
    if (s_.host(from)->complete(c, stolen ? host_state::kNoSeat : self_)) {
      me_.counters.completion_signals.bump();
      chain_ns_ = 0;  // the eventfd write came between
    }
    return true;
  }

  // The stuck call returned after the host retired this worker. From here on only the
  // slot (kept alive by this thread's shared_ptr) and the record are touched: the pool may
  // be gone. The first of host and worker to set handoff leaves the record to the other.
  void hand_over_stuck(call_base* c) noexcept {
    // Partner: the acquire load in collect_handoffs, or the exchange at shutdown
    // (worker_seats.cpp, steps 4 and 5).
    if (!me_.handoff.exchange(true, std::memory_order_acq_rel)) {
      // First: the pool frees the record, and joins this thread before it can be gone, so
      // this store still reaches it. The next host to drain tends the seats.
      s_.seats_need_care.store(true, std::memory_order_release);
      return;
    }
    // The pool gave the record up (shutdown returned): destroy it here.
    call_allocator::destroy_orphan(c);
  }

  // Every other seat, from the next one on (one relaxed load each when it is not parked).
  void wake_one_peer() noexcept {
    if (s_.wake_one_parked(self_ + 1, n_ - 1)) me_.counters.peer_wakes.bump();
  }

  bool spin(call_base*& c, bool& stolen, unsigned& from) noexcept {
    skipped_spin_ = false;
    idle_since_ns_ = 0;
    if (s_.policy.spin_budget_ns() == 0) return false;
    if (s_.policy.cpu_shared()) {
      me_.counters.spins_skipped_shared_cpu.bump();
      return false;
    }
    const bool adaptive = s_.policy.backs_off_after_misses();
    if (adaptive && !backoff_.should_spin()) {
      me_.counters.spins_skipped_after_misses.bump();
      skipped_spin_ = true;
      idle_since_ns_ = steady_now_ns();
      return false;
    }
    if (!s_.policy.try_begin_spin()) return false;
    me_.counters.spins.bump();
    me_.bell.set_spinning();
    idle_since_ns_ = steady_now_ns();
    // budget_ is the policy's budget unless the gate applies (only then does it learn).
    const std::int64_t deadline = idle_since_ns_ + static_cast<std::int64_t>(budget_.ns());
    bool caught = false;
    for (unsigned i = 0;; ++i) {
      if (claim(c, stolen, from)) {
        caught = true;
        break;
      }
      if ((i & 63) == 63) {
        if (steady_now_ns() >= deadline) break;
        if (s_.stopping.load(std::memory_order_relaxed)) break;
      }
      KNIT_CPU_RELAX();
    }
    s_.policy.end_spin();
    // A catch leaves the word at spinning until execute has claimed the record (it says
    // why): a ringer acts only on parked, and dispatch reads the word as a hint.
    if (!caught) me_.bell.set_running();
    if (adaptive) {
      if (caught) backoff_.caught();
      else backoff_.missed();
    }
    if (caught) {
      me_.counters.spin_hits.bump();
      if (doorbell_ && n_ > 1 && s_.policy.hand_off_after_catch()) wake_one_peer();
    }
    return caught;
  }

  // How a park ended: work_seen = it never slept (work or the stop flag showed up in
  // its re-check); doorbell = rung (or a spurious futex return); timeout = park_ms ran out.
  enum class park_exit { work_seen, doorbell, timeout };

  // What this idle period teaches the gate (only where it applies, and only a period that
  // spun or skipped its spin: idle_since_ns_ set). A skipped spin that would have caught
  // what ended the park resets the miss backoff; a period that began at a call's end and
  // ended at the next call is a gap the budget learns (spin_budget.hpp).
  void learn_from(park_exit exit) noexcept {
    const bool began_at_a_call = after_call_;
    after_call_ = false;
    if (!s_.policy.backs_off_after_misses() || idle_since_ns_ == 0) return;
    if (exit == park_exit::timeout) {
      budget_.park_timed_out();
      return;
    }
    const auto gap = static_cast<std::uint64_t>(steady_now_ns() - idle_since_ns_);
    if (skipped_spin_ && (exit == park_exit::work_seen || gap <= budget_.ns())) {
      backoff_.caught();
    }
    if (began_at_a_call) budget_.call_arrived_after(gap);
  }

  park_exit park() noexcept {
    clear_empty_rings();
    at_interleaving_point(interleaving_point::before_park);
    me_.bell.announce_park();  // state = parked; seq_cst fence
    // Consider: a host pushed a call after our last claim() but before announce_park().
    // It may have read our state as running and skipped the wake; this re-check sees it.
    // Partner of the stopping load: the pool's release store in stop_workers.
    if (work_visible() || s_.stopping.load(std::memory_order_acquire)) {
      me_.bell.cancel_park();
      return park_exit::work_seen;
    }
    me_.counters.parks.bump();
    park_exit exit = park_exit::doorbell;
    if (me_.bell.wait(s_.options.park_ms) == park_end::timeout) {
      me_.counters.wakes_timeout.bump();
      exit = park_exit::timeout;
    } else {
      me_.counters.wakes_doorbell.bump();
    }
    return exit;
  }

  pool_shared& s_;
  const unsigned self_;
  worker_slot& me_;
  const unsigned n_;
  const bool lent_;  // a lent worker (self_ >= n_): it has no seat of its own
  const bool steal_;
  const bool doorbell_;
  // host_state.hpp; a lent worker never reads it (it has no seat: seat 0's stands in).
  std::atomic<std::uint64_t>& my_hosts_ = s_.seat_pending[lent_ ? 0 : self_].hosts;
  unsigned cursor_ = 0;  // the host served last from this seat (claim_in_turn)
  // The end of the last call while this worker goes straight on to the next (one completion
  // push, one ring pop, no system call between): it stands for that call's start, one clock
  // read a call instead of two; 0 = read the clock. The gap joins what a preemption can
  // add to a call's measured run time, as one inside run() already does.
  std::int64_t chain_ns_ = 0;
  spin_backoff backoff_;                            // this worker's own: no other thread reads it
  spin_budget budget_{s_.policy.spin_budget_ns()};  // this worker's own, as backoff_ is
  bool skipped_spin_ = false;       // this idle period's spin was skipped by the backoff
  bool after_call_ = false;         // this worker took a call since it last parked
  std::int64_t idle_since_ns_ = 0;  // when this idle period's spin (or skip) began; 0 = none
};

}  // namespace

void worker_main(pool_shared& shared, std::shared_ptr<worker_slot> me, unsigned self) noexcept {
  char name[32];
  const bool lent = self >= shared.seat_count;
  std::snprintf(name, sizeof name, lent ? "knit-lent-%u" : "knit-worker-%u",
                lent ? self - shared.seat_count : self);
  name[15] = '\0';  // a thread's name holds 15 characters
  pthread_setname_np(pthread_self(), name);
  (void)drop_inherited_loop_slice();  // refused: it keeps the loop's slice, nothing worse
  if (worker_sched_requested(shared.options)) {
    me->sched_error = apply_worker_sched(shared.options);
    if (me->sched_error.error != 0) {
      me->counters.sched_failures.bump();
      char text[320];
      me->sched_error.format(text, sizeof text, shared.options, self);
      log_format("knit: %s; it keeps the host's setting", text);
    }
    me->sched_applied.store(true, std::memory_order_release);  // publishes sched_error
    me->sched_applied.notify_all();
  }
  if (lent) {
    worker_loop(shared, *me, self).run_lent();
  } else {
    worker_loop(shared, *me, self).run();
  }
}

worker_thread start_worker(pool_shared& shared, std::shared_ptr<worker_slot> me, unsigned self) {
  const cpu_set_t cpus = worker_cpu_set(shared.options, self, shared.unpinned_cpus);
  bool refused = false;
  worker_thread t(
      cpus,
      [&shared, me = std::move(me), self]() mutable { worker_main(shared, std::move(me), self); },
      refused);
  if (refused && !shared.options.worker_cpus.empty()) {
    log_format("knit: worker %u: could not pin to CPU %d (continuing unpinned)", self,
               shared.options.worker_cpus[self % shared.options.worker_cpus.size()]);
  } else if (refused) {
    log_format(
        "knit: worker %u: could not keep to the CPUs of the thread that built the pool "
        "(continuing on its starter's)",
        self);
  }
  return t;
}

}  // namespace knit::detail

// lent_workers: lending a temporary extra worker when every worker is held by a long call
// and calls wait behind them (pool_options::lend_after, max_lent_workers), as Go hands
// off the P of a thread blocked in a system call. The held calls are not touched: they
// run on and deliver their results as usual; only the calls waiting behind them move on.
//
// Protocol (the hosts, the pool under its seats mutex, each lent worker)
//   Slots. The pool keeps lent_limit lent slots (pool_shared::lent), made with the pool
//   and alive as long as it: lent slot k is seat index seat_count + k for the stuck scan
//   (stuck_scan.hpp), so a call on a lent worker fails at its own stuck limit like any
//   other, and that worker is retired as in "Retiring a worker" (worker_seats.cpp) but the
//   slot is replaced by a fresh idle one, with no thread.
//   When (host h, in its drain and in next_deadline): h has records out that no worker
//   runs (queued in its rings), every seat's worker has run its current call for at least
//   lend_after, and, after a seq_cst fence (after h's pushes), no lent worker is working
//   without a long call of its own (phase working and call_started_ns 0 or recent), and
//   fewer than lent_limit are working. Then h asks the pool to lend one (lend_worker).
//   next_deadline names the moment that becomes true (the latest start + lend_after; a
//   worker between calls counts as starting one now, since the worker waking for h's queue
//   may take a long call first), so a loop asleep on its timer wakes for it; nothing is
//   timed while none of h's calls waits.
//   Held calls (host h, in its drain, before it judges When): a call dispatch queued
//   behind a worker it expected to be free soon (dispatch_policy.hpp, rule 2: a call within
//   the running average, or one taken and not yet stamped) while that call has now run for
//   lend_after, with another seat's worker parked: a parked worker does not steal, so the
//   call would wait for the held one while a worker sleeps, and When lends none while a
//   seat is not held. h wakes the first parked seat's worker instead (steal and doorbell
//   on), which steals it in its pass over its peers' rings before it parks again. Steal
//   off: nothing (docs/not-done.md). Forced: tests/core/lend_interleavings_test.cpp.
//   Lending (the pool, under the seats mutex): none if the workers are being stopped, or
//   a lent worker is already working with no call (it takes the waiting ones: two hosts
//   asking at once lend one); else an idle slot: join its ended thread, phase = working,
//   start a thread on it. No idle slot: the limit is reached and the calls wait.
//   A lent worker: claims from every seat's rings (any host's), runs, hands back as a
//   worker does (worker.cpp, execute). Finding nothing: phase = leaving, fence(seq_cst),
//   re-check every ring; work: phase = working, go on; none: count itself retired, phase
//   = idle (release), end. It never spins or parks, so an idle pool has no lent thread.
//   Guarantee (no stranded call): host h pushes, fences, loads the phases; the worker
//   stores leaving, fences, loads the rings (Dekker): either h sees leaving or idle (and
//   lends a fresh one, or retries at its next drain while the leaving one ends), or the
//   worker's re-check sees h's call. Forced, both places the host may decide while the
//   worker goes (before its leaving store, and between it and the re-check): tests/core/
//   lend_interleavings_test.cpp.
//   Counters: a lent slot's worker counters stay with the slot (pool_stats::lent), so a
//   call run on a lent worker counts in pool_stats::totals() like any other.
//   Stop: the pool stops the workers only once every record came back, so each lent
//   worker ends on its own; stop_workers joins them (worker_seats.cpp).
#include <algorithm>
#include <atomic>
#include <thread>

#include "host_state.hpp"
#include "invariant.hpp"
#include "pool_impl.hpp"
#include "process/process_ring.hpp"

namespace knit::detail {

// With the pool's constructor: the lent slots, idle, no thread.
void pool_impl::make_lent_slots() {
  const unsigned n = shared_.options.effective_lent_limit();
  shared_.lent_limit = n;
  shared_.lend_after_ns = std::chrono::nanoseconds(shared_.options.lend_after).count();
  shared_.lent = std::make_unique<std::atomic<worker_slot*>[]>(n);
  lent_slots_.reserve(n);
  for (unsigned k = 0; k < n; ++k) {
    lent_slots_.push_back(std::make_shared<worker_slot>(shared_.options.max_hosts));
    shared_.lent[k].store(lent_slots_[k].get(), std::memory_order_relaxed);
  }
}

// "Lending", on the thread of the host that found its calls waiting.
void pool_impl::lend_worker() noexcept {
  std::lock_guard lock(seats_mutex_);
  if (seats_closed_) return;
  std::shared_ptr<worker_slot>* free = nullptr;
  unsigned free_k = 0;
  for (unsigned k = 0; k < lent_slots_.size(); ++k) {
    worker_slot& w = *lent_slots_[k];
    // Partner: the lent worker's release store of idle as it ends.
    const auto phase = w.phase.load(std::memory_order_acquire);
    if (phase == worker_slot::lent_phase::working &&
        w.call_started_ns.load(std::memory_order_relaxed) == 0) {
      return;  // one is claiming now: it takes the waiting calls
    }
    if (phase == worker_slot::lent_phase::idle && !free) {
      free = &lent_slots_[k];
      free_k = k;
    }
  }
  if (!free) return;  // the limit: the waiting calls wait
  worker_slot& w = **free;
  KNIT_ASSERT(!w.retired && w.call_started_ns.load(std::memory_order_relaxed) == 0);
  if (w.thread.joinable()) w.thread.join();  // it ended idle: it is past its last store
  w.phase.store(worker_slot::lent_phase::working, std::memory_order_relaxed);
  try {
    // The thread's start publishes the phase and the slot.
    w.thread = start_worker(shared_, *free, shared_.seat_count + free_k);
  } catch (...) {
    w.phase.store(worker_slot::lent_phase::idle, std::memory_order_relaxed);
    return;  // asked again at the next drain
  }
  ++lent_started_;
}

// A call on lent slot k was declared stuck (retire_seat): the slot joins the retired list
// with the record, a fresh idle slot takes its place. Under seats_mutex_.
void pool_impl::retire_lent(unsigned k, worker_slot* slot, call_base* stuck) noexcept {
  KNIT_ASSERT(k < lent_slots_.size() && lent_slots_[k].get() == slot && !slot->retired);
  slot->retired = true;
  slot->stuck_record = stuck;
  ++retirements_;
  ++lent_retired_stuck_;
  retired_running_.store(retired_running_.load(std::memory_order_relaxed) + 1,
                         std::memory_order_relaxed);
  slot->next_retired = std::move(retired_head_);
  retired_head_ = lent_slots_[k];
  try {
    auto fresh = std::make_shared<worker_slot>(shared_.options.max_hosts);
    // The lent counts only grow (pool_stats::lent): the retired thread bumps nothing more
    // (it counted its stuck call as it claimed it), so the fresh slot goes on from here.
    fresh->counters.carry_over(slot->counters);
    shared_.lent[k].store(fresh.get(), std::memory_order_release);
    lent_slots_[k] = std::move(fresh);
  } catch (...) {
    // No memory for a fresh slot: the entry keeps the retired one (phase working), so this
    // pool lends one worker fewer from now on.
  }
}

// stop_workers, under seats_mutex_: every lent worker ends on its own once it finds the
// rings empty, which they are when the workers are stopped.
void pool_impl::join_lent() noexcept {
  for (auto& w : lent_slots_) {
    if (!w->retired && w->thread.joinable()) w->thread.join();
  }
}

std::uint64_t pool_impl::lent_now() const noexcept {  // under seats_mutex_
  const std::uint64_t retired =
      lent_retired_stuck_ + shared_.lent_retired_idle.load(std::memory_order_relaxed);
  return lent_started_ > retired ? lent_started_ - retired : 0;
}

// pool_stats::lent, under seats_mutex_: every lent slot's counters together. A slot's
// counts stay with it from one lent thread to the next, and go on in the fresh slot that
// replaces a retired one (retire_lent), so the sum only grows.
worker_stats pool_impl::lent_counters() const noexcept {
  worker_stats sum;
  for (const auto& w : lent_slots_) {
    const worker_stats one = w->counters.snapshot();
#define KNIT_ADD_LENT_COUNTER(name, description) sum.name += one.name;
    KNIT_WORKER_COUNTERS(KNIT_ADD_LENT_COUNTER)
#undef KNIT_ADD_LENT_COUNTER
  }
  return sum;
}

// "When": the moment host h's waiting calls make the pool lend (in the past: now), or
// nothing. With `now` (the drain), stops at the first worker that is not held that long.
// Without (next_deadline), a worker between calls counts as starting one now: it may take
// a long call ahead of h's (a seat's worker waking for the call h queued behind it), so h
// looks again lend_after later, for as long as its calls wait.
std::optional<std::int64_t> host_state::lend_due(std::optional<std::int64_t> now) const {
  if (shared_.lent_limit == 0 || out_ == 0) return std::nullopt;
  const std::int64_t after = shared_.lend_after_ns;
  const std::int64_t t = now ? *now : steady_now_ns();
  std::int64_t due = 0;
  // Whether a worker that started at `started` (0: none yet) has been held for `after`,
  // else the moment it will be; false when it is not held in the drain's check.
  auto held = [&](std::int64_t started) {
    if (now && (started == 0 || t - started < after)) return false;
    due = std::max(due, (started == 0 ? t : started) + after);
    return true;
  };
  for (unsigned w = 0; w < shared_.seat_count; ++w) {
    if (!held(shared_.seat(w).call_started_ns.load(std::memory_order_relaxed))) {
      return std::nullopt;
    }
  }
  std::size_t running = 0;
  for_each_running(shared_, index_, [&](const running_call&) { ++running; });
  // None of h's calls waits for a worker thread. A process call waits in h's ring, which
  // lends children of its own (process_ring.hpp): it makes the pool lend no thread.
  if (out_ <= running || out_ - running <= (ring_ ? ring_->records() : 0)) return std::nullopt;
  // Partner: each lent worker's fence between its leaving store and its re-check.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  unsigned working = 0;
  for (unsigned k = 0; k < shared_.lent_limit; ++k) {
    worker_slot& w = *shared_.lent[k].load(std::memory_order_acquire);
    if (w.phase.load(std::memory_order_relaxed) != worker_slot::lent_phase::working) continue;
    ++working;
    // A lent worker between calls takes h's waiting ones: none to lend now.
    const std::int64_t started = w.call_started_ns.load(std::memory_order_relaxed);
    if (!held(started)) return std::nullopt;
  }
  if (working >= shared_.lent_limit) return std::nullopt;  // the limit: nothing to time
  return due;
}

void host_state::lend_if_starved(std::int64_t now) {
  if (wake_a_sleeper_for_held_calls(now)) return;
  if (const auto due = lend_due(now); due && *due <= now) owner_.lend_worker();
}

// "Held calls": true if it woke a parked seat's worker.
bool host_state::wake_a_sleeper_for_held_calls(std::int64_t now) {
  const pool_options& o = shared_.options;
  if (!o.steal || !o.doorbell || shared_.seat_count < 2) return false;
  bool held = false;
  for (unsigned w = 0; w < shared_.seat_count && !held; ++w) {
    if (rings_[w]->producer_size() == 0) continue;  // this host's calls into seat w
    const std::int64_t started = shared_.seat(w).call_started_ns.load(std::memory_order_relaxed);
    held = started != 0 && now - started >= shared_.lend_after_ns;
  }
  if (!held) return false;
  // As a peer's wake does (worker.cpp, wake_one_peer), over every seat.
  if (!shared_.wake_one_parked(0, shared_.seat_count)) return false;
  counters_.host_wakes.bump();
  return true;
}

}  // namespace knit::detail

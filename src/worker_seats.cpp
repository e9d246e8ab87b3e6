// worker_seats: the host's side of the worker seats: starting their threads (and waiting
// for their scheduling settings), declaring a running call stuck, retiring its worker and
// putting a fresh one in the seat, handing the stuck record over, and stopping the workers
// at shutdown. Part of pool_impl (pool_impl.hpp); the worker's side is worker.cpp
// (hand_over_stuck).
//
// Retiring a worker (who may touch a record, and when it is freed)
//   The host declares a running call stuck in drain(): its worker's slot shows the record
//   in `current_of[0]` and `call_started_ns` is older than the call's stuck_after. Then:
//   1. host: CAS record running -> stuck. Failing means the call just finished: nothing
//      to do. Winning means the worker's own CAS running -> done will fail, so the worker
//      will never push this record into a ring nor claim another call.
//   2. host: delivers errc::stuck (errc::timed_out if the call's deadline has passed) at
//      once, unless a deadline already delivered it, and destroys the handler (its
//      captures are the host's); the record leaves `out_`.
//   3. host: marks the slot retired (dispatch skips it), pops what the worker had pushed
//      into its done ring before the call (ordered by the CAS in 1), links the slot into
//      its retired list, and puts a fresh slot with a fresh thread in the seat. The calls
//      still queued in the retired slot's ring move on: thieves may take them, and the
//      host pops them itself (job_ring allows any number of consumers) ahead of the
//      backlog.
//   4. worker, when the stuck task returns: its CAS fails; it touches nothing but its
//      slot (kept alive by its own shared_ptr) and the record, and sets `handoff`
//      (exchange, acq_rel). If it was first, the host frees the record when it sees the
//      flag (next drain) and joins the thread; if the host was first, the worker destroys
//      the record itself (call_allocator::destroy_orphan). Either way the handler is not
//      called again and the record is freed exactly once.
//   5. host, at shutdown: for each retired slot whose task has not returned it sets
//      `handoff` first and detaches the thread: the record is then the thread's, freed if
//      the task ever returns, and reported (shutdown_report, pool_stats.retired_running).
//   A retired slot itself stays in the retired list until shutdown, since a thief may still
//   hold a pointer it read from the seat before the swap.
//   Attached hosts (host_state.hpp): their rings belong to the seat, not the slot, so the
//   fresh worker takes what they queued into it and nothing moves; the retired worker never
//   touches them again (it is inside its stuck task, then only in its slot). An attached
//   host declares its own calls stuck (steps 1 and 2 on its thread, through its own entry
//   current_of[h]) and does step 3's seat swap itself (retire_seat_for, under seats_mutex_:
//   a fresh slot published in the seat before its thread starts, kept as the old slot's
//   successor, the record in its retire_stuck), so the seat is replaced whoever drains. The
//   builder's part of step 3 (its done ring and its ring of the builder's own calls in
//   that slot, the retired list) waits for its next drain or shutdown: take_retire_requests
//   walks each seat's chain of such slots into slots_; steps 4 and 5 are unchanged, except
//   that the record goes back to the heap (destroy_orphan), since it came from that host's
//   free list. Meanwhile the builder's own scans skip a seat whose slot is not slots_[i].
#include <memory>
#include <string>
#include <system_error>
#include <thread>

#include "call_state.hpp"
#include "invariant.hpp"
#include "pool_impl.hpp"
#include "stuck_scan.hpp"

namespace knit::detail {

// The first slot and thread of every seat. A thread that cannot start stops the ones
// already running and rethrows (the constructor fails).
void pool_impl::start_workers() {
  const unsigned n = shared_.options.threads;
  shared_.seat_count = n;
  shared_.seats = std::make_unique<std::atomic<worker_slot*>[]>(n);
  slots_.reserve(n);
  for (unsigned i = 0; i < n; ++i) {
    slots_.push_back(std::make_shared<worker_slot>(per_ring_, shared_.options.max_hosts));
    shared_.seats[i].store(slots_[i].get(), std::memory_order_relaxed);
  }
  for (unsigned i = 0; i < n; ++i) {  // std::thread's start publishes the seats above
    try {
      slots_[i]->thread = std::thread(worker_main, std::ref(shared_), slots_[i], i);
    } catch (...) {
      shutdown_report ignored;
      stop_workers(ignored);
      throw;
    }
  }
}

// Waits until every first worker has applied worker_nice / worker_sched
// (worker_sched.hpp); if one could not, stops them all and throws, naming the setting.
void pool_impl::await_sched() {
  for (unsigned i = 0; i < slots_.size(); ++i) {
    worker_slot& w = *slots_[i];
    // Partner: the worker's release store of sched_applied after it wrote sched_error.
    while (!w.sched_applied.load(std::memory_order_acquire)) {
      w.sched_applied.wait(false, std::memory_order_acquire);
    }
    if (w.sched_error.error == 0) continue;
    char text[320];
    w.sched_error.format(text, sizeof text, shared_.options, i);
    const int error = w.sched_error.error;
    shutdown_report ignored;
    stop_workers(ignored);
    throw std::system_error(error, std::generic_category(), std::string("knit::pool: ") + text);
  }
}

// Retires every worker whose call of this host has run past its stuck_after ("Retiring a
// worker").
std::size_t pool_impl::check_stuck(std::chrono::steady_clock::time_point now_tp) {
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now_tp.time_since_epoch()).count();
  std::size_t delivered = 0;
  for_each_running(shared_, 0, [&](const running_call& r) {
    // A slot not in slots_ yet (an attached host's successor, taken in the next drain) is
    // looked at then.
    if (r.slot != slots_[r.seat].get() || slots_[r.seat]->retired) return;
    if (!runs_past_its_limit(r, now)) return;
    call_base* c = r.record;
    const bool past_deadline = c->deadline <= now_tp;
    const bool was_delivered = c->delivered;
    const std::error_code ec = make_error_code(past_deadline ? errc::timed_out : errc::stuck);
    if (retire(r.seat, c, ec, true) && !was_delivered) ++delivered;
  });
  return delivered;
}

// Steps 1-3 of "Retiring a worker". Returns false if the call finished first.
bool pool_impl::retire(unsigned i, call_base* c, std::error_code ec, bool replace) {
  if (!try_move(*c, call_state::running, call_state::stuck)) return false;  // step 1
  // The retired worker never writes current_of again; clearing it keeps every later scan
  // off a record that its worker may free (a seat whose replacement failed keeps this slot).
  slots_[i]->current_of[0].store(nullptr, std::memory_order_relaxed);
  KNIT_ASSERT(out_ > 0);
  --out_;
  if (!c->delivered) {  // step 2
    if (ec == errc::timed_out) counters_.calls_timed_out.bump();
    deliver(c, ec);
  }
  c->drop_handler();  // the handler's captures are the host's: never destroyed by the worker
  take_seat(i, c, replace);
  return true;
}

// Step 3 of "Retiring a worker" for the builder's bookkeeping: the slot leaves the
// builder's view (dispatch skips it, its done ring is popped, its ring of the builder's
// calls is flushed by flush_retired_rings) and waits in the retired list for its task.
void pool_impl::mark_retired(const std::shared_ptr<worker_slot>& slot, call_base* stuck,
                             bool attached) {
  worker_slot& w = *slot;
  KNIT_ASSERT(!w.retired && w.stuck_record == nullptr);
  w.retired = true;
  w.stuck_record = stuck;
  w.stuck_record_attached = attached;
  ++retired_running_;
  if (!attached) counters_.calls_stuck.bump();  // an attached host's: retire_seat_for counted it
  w.next_retired = std::move(retired_head_);
  retired_head_ = slot;
}

// Step 3 for the builder's own call.
void pool_impl::take_seat(unsigned i, call_base* stuck, bool replace) {
  mark_retired(slots_[i], stuck, false);
  std::size_t returned = 0;
  pop_done(*slots_[i], returned);  // what it finished before this call (ordered by the CAS)
  if (replace) {
    needs_replacement_ = true;
    replace_retired_seats();
  }
}

// Step 3 for an attached host's call, on that host's thread (host_state.cpp, give_up_on):
// the seat gets its fresh worker here and now, whoever drains, so the calls queued into
// the seat's rings behind the stuck one run at once; the builder's bookkeeping for the old
// slot follows in its next drain or at shutdown (take_retire_requests).
void pool_impl::retire_seat_for(unsigned seat, worker_slot* slot, call_base* stuck) noexcept {
  {
    std::lock_guard lock(seats_mutex_);
    // The stuck call runs on `slot`, so nobody else retired it: it still holds the seat.
    KNIT_ASSERT(shared_.seats[seat].load(std::memory_order_relaxed) == slot);
    KNIT_ASSERT(slot->retire_stuck == nullptr && !slot->successor);
    slot->retire_stuck = stuck;
    ++attached_retirements_;
    // Closing: no fresh worker (the builder's shutdown takes the seat without one).
    if (!shared_.closed.load(std::memory_order_acquire)) {
      slot->successor = start_fresh_slot(seat, *slot);
    }
    shared_.retire_requested.store(true, std::memory_order_release);
  }
  // The bell's fence orders the flag before its check, as a worker's push (host_doorbell.hpp).
  shared_.host_bell.notify();
}

// "Retiring a worker", attached hosts' calls: the builder takes the slots they retired
// (each record already delivered on its host's thread and out of that host's count; the
// record is the seat's now) and the successors they started into slots_.
void pool_impl::take_retire_requests(bool replace) {
  if (!shared_.retire_requested.load(std::memory_order_relaxed)) return;
  // Partner: the retiring host's release store of the flag (a later one sets it again and
  // rings this host's bell: none is missed).
  if (!shared_.retire_requested.exchange(false, std::memory_order_acquire)) return;
  worker_slot* const newest_before = retired_head_.get();
  {
    std::lock_guard lock(seats_mutex_);
    for (unsigned i = 0; i < slots_.size(); ++i) {
      while (call_base* c = slots_[i]->retire_stuck) {
        const std::shared_ptr<worker_slot> old = slots_[i];
        old->retire_stuck = nullptr;
        mark_retired(old, c, true);
        if (!old->successor) {
          if (replace) needs_replacement_ = true;  // drain calls replace_retired_seats
          break;
        }
        slots_[i] = std::move(old->successor);
      }
    }
  }
  // Outside the lock (a handler may run): what each worker finished before its stuck call.
  std::size_t returned = 0;
  for (worker_slot* w = retired_head_.get(); w != newest_before; w = w->next_retired.get()) {
    pop_done(*w, returned);
  }
}

// A fresh slot and thread for seat `i`, published before the thread starts; null (the seat
// keeps `old`) if either cannot be had. Under seats_mutex_.
std::shared_ptr<worker_slot> pool_impl::start_fresh_slot(unsigned i, worker_slot& old) noexcept {
  try {
    auto fresh = std::make_shared<worker_slot>(per_ring_, shared_.options.max_hosts);
    fresh->counters.carry_over(old.counters);
    // The seat is published before the thread starts (interleaving
    // "replacement_parks_before_its_seat_is_published", docs/many-hosts.md): an attached
    // host rings the bell of the slot it reads from the seat after its fence, so that
    // must be the slot whose worker may park. The fence orders this store before that
    // worker's park fence. Writer: whoever retires (under seats_mutex_); partner: seat()'s
    // acquire load.
    shared_.seats[i].store(fresh.get(), std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    try {
      fresh->thread = std::thread(worker_main, std::ref(shared_), fresh, i);
    } catch (...) {
      shared_.seats[i].store(&old, std::memory_order_release);
      throw;
    }
    ++workers_replaced_;
    return fresh;
  } catch (...) {
    return nullptr;
  }
}

// Gives every retired seat a fresh slot and thread. If that fails (no memory, no more
// threads), the seat keeps its retired slot (dispatch skips it) and the next drain retries.
void pool_impl::replace_retired_seats() noexcept {
  needs_replacement_ = false;
  std::lock_guard lock(seats_mutex_);
  for (unsigned i = 0; i < slots_.size(); ++i) {
    if (!slots_[i]->retired) continue;
    std::shared_ptr<worker_slot> fresh = start_fresh_slot(i, *slots_[i]);
    if (!fresh) {
      needs_replacement_ = true;
      continue;
    }
    slots_[i] = std::move(fresh);  // the retired list keeps the old slot alive
  }
}

// Step 4 of "Retiring a worker", host side: a stuck task returned; free its record.
void pool_impl::collect_handoffs() noexcept {
  if (retired_running_ == 0) return;
  for (worker_slot* w = retired_head_.get(); w; w = w->next_retired.get()) {
    // Partner: the retired worker's acq_rel exchange in hand_over_stuck (worker.cpp).
    if (!w->stuck_record || !w->handoff.load(std::memory_order_acquire)) continue;
    if (w->thread.joinable()) w->thread.join();  // it ends right after the handoff
    destroy_stuck(*w);
    KNIT_ASSERT(retired_running_ > 0);
    --retired_running_;
  }
}

// Moves the calls left in retired rings to live workers, oldest first and ahead of the
// backlog (they were dispatched before anything in it). A call that finds no room waits
// in the slot's `held` until the next round.
void pool_impl::flush_retired_rings() {
  for (worker_slot* w = retired_head_.get(); w; w = w->next_retired.get()) {
    for (;;) {
      call_base* c = w->held;
      w->held = nullptr;
      if (!c && !w->queued.try_pop(c)) break;
      KNIT_ASSERT(out_ > 0);
      --out_;  // dispatch() counts it again
      // Relaxed: no worker claimed this record, so only the host has written its state.
      if (c->state.load(std::memory_order_relaxed) == call_state::abandoned) {
        destroy(c);  // already delivered (cancel, deadline, shutdown)
        continue;
      }
      if (!dispatch(c)) {
        ++out_;
        w->held = c;
        return;
      }
    }
  }
}

// Past shutdown's deadline: retires every worker that is running a call, without
// replacement (its thread is detached in stop_workers if the task has not returned).
std::size_t pool_impl::give_up_running() {
  std::size_t n = 0;
  for_each_running(shared_, 0, [&](const running_call& r) {
    if (r.slot != slots_[r.seat].get() || slots_[r.seat]->retired) return;
    const bool was_delivered = r.record->delivered;
    if (retire(r.seat, r.record, make_error_code(errc::cancelled), false)) {
      if (!was_delivered) counters_.calls_cancelled.bump();
      ++n;
    }
  });
  return n;
}

// A stuck record whose task returned: the builder's own goes back to its allocator, an
// attached host's to the heap (its allocator is that host's).
void pool_impl::destroy_stuck(worker_slot& w) noexcept {
  if (w.stuck_record_attached) {
    call_allocator::destroy_orphan(w.stuck_record);
  } else {
    destroy(w.stuck_record);
  }
  w.stuck_record = nullptr;
}

// Shutdown step 4 (knit/pool.hpp), and step 5 of "Retiring a worker".
void pool_impl::stop_workers(shutdown_report& report) noexcept {
  // Writer: the host, once every record came back; partner: each worker's acquire load
  // after its park fence (worker.cpp run() and park()), so a stop is never missed.
  shared_.stopping.store(true, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with each worker's park fence
  for (auto& w : slots_) {
    if (!w->retired) w->bell.wake_if_parked();  // forced even with doorbell=false
  }
  for (auto& w : slots_) {
    if (!w->retired && w->thread.joinable()) w->thread.join();
  }
  // Step 5: never join a task that may never return.
  for (worker_slot* w = retired_head_.get(); w; w = w->next_retired.get()) {
    if (!w->stuck_record) continue;
    // Partner: the retired worker's exchange in hand_over_stuck; the second one frees.
    if (w->handoff.exchange(true, std::memory_order_acq_rel)) {  // it returned meanwhile
      if (w->thread.joinable()) w->thread.join();
      destroy_stuck(*w);
      --retired_running_;
    } else {
      w->thread.detach();  // the record is the thread's now
      ++report.threads_detached;
    }
    w->stuck_record = nullptr;
  }
  // Unlink iteratively (a long chain of shared_ptr would recurse in its destructor).
  while (retired_head_) retired_head_ = std::move(retired_head_->next_retired);
  stopped_ = true;
}

}  // namespace knit::detail

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
//   current_of[h]) and leaves step 3 to the seats' owner, here: take_retire_requests
//   reads retire_requests[w] in drain and at shutdown and takes the seat exactly as for
//   the builder's own call; steps 4 and 5 are unchanged, except that the record goes back
//   to the heap (destroy_orphan), since it came from that host's free list.
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
    if (slots_[r.seat]->retired || !runs_past_its_limit(r, now)) return;
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
    if (ec == errc::timed_out) ++stats_.calls_timed_out;
    deliver(c, ec);
  }
  c->drop_handler();  // the handler's captures are the host's: never destroyed by the worker
  take_seat(i, c, false, replace);
  return true;
}

// Step 3 of "Retiring a worker", for a call of this host or of an attached one.
void pool_impl::take_seat(unsigned i, call_base* stuck, bool attached, bool replace) {
  worker_slot& w = *slots_[i];
  KNIT_ASSERT(!w.retired && w.stuck_record == nullptr);
  w.retired = true;
  w.stuck_record = stuck;
  w.stuck_record_attached = attached;
  ++retired_running_;
  ++stats_.calls_stuck;
  std::size_t returned = 0;
  pop_done(w, returned);  // what it finished before this call (ordered by the stuck CAS)
  w.next_retired = std::move(retired_head_);
  retired_head_ = slots_[i];
  if (replace) {
    needs_replacement_ = true;
    replace_retired_seats();
  }
}

// "Retiring a worker", attached hosts' calls: the seats that attached hosts asked to
// retire (host_state.cpp, check_stuck). Each request's record is already delivered on its
// host's thread and out of that host's count; the record is the seat's now.
void pool_impl::take_retire_requests(bool replace) {
  if (!shared_.retire_requested.load(std::memory_order_relaxed)) return;
  // Partner: the declaring host's release store of the flag after its record (and a later
  // request sets the flag again and rings this host's bell: none is missed).
  if (!shared_.retire_requested.exchange(false, std::memory_order_acquire)) return;
  for (unsigned i = 0; i < slots_.size(); ++i) {
    call_base* c = shared_.retire_requests[i].exchange(nullptr, std::memory_order_acquire);
    if (!c) continue;
    ++attached_retirements_;
    take_seat(i, c, true, replace);
  }
}

// Gives every retired seat a fresh slot and thread. If that fails (no memory, no more
// threads), the seat keeps its retired slot (dispatch skips it) and the next drain retries.
void pool_impl::replace_retired_seats() noexcept {
  needs_replacement_ = false;
  for (unsigned i = 0; i < slots_.size(); ++i) {
    if (!slots_[i]->retired) continue;
    try {
      auto fresh = std::make_shared<worker_slot>(per_ring_, shared_.options.max_hosts);
      fresh->counters.carry_over(slots_[i]->counters);
      // The seat is published before the thread starts (interleaving
      // "replacement_parks_before_its_seat_is_published", docs/many-hosts.md): an attached
      // host rings the bell of the slot it reads from the seat after its fence, so that
      // must be the slot whose worker may park. The fence orders this store before that
      // worker's park fence. Writer: the host; partner: seat()'s acquire load.
      worker_slot* const old = slots_[i].get();
      shared_.seats[i].store(fresh.get(), std::memory_order_release);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      try {
        fresh->thread = std::thread(worker_main, std::ref(shared_), fresh, i);
      } catch (...) {
        shared_.seats[i].store(old, std::memory_order_release);
        throw;
      }
      slots_[i] = std::move(fresh);  // the retired list keeps the old slot alive
      ++stats_.workers_replaced;
    } catch (...) {
      needs_replacement_ = true;
    }
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
    if (slots_[r.seat]->retired) return;
    const bool was_delivered = r.record->delivered;
    if (retire(r.seat, r.record, make_error_code(errc::cancelled), false)) {
      if (!was_delivered) ++stats_.calls_cancelled;
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

// worker_seats: the pool's worker seats: starting their threads (and waiting for their
// scheduling settings), retiring the worker of a stuck call and putting a fresh one in
// the seat, freeing the stuck record when its task returns, and stopping the workers at
// shutdown. Part of pool_impl (pool_impl.hpp); any host retires (host_state.cpp,
// give_up_on), and the worker's side is worker.cpp (hand_over_stuck).
//
// Retiring a worker (who may touch a record, and when it is freed)
//   Host h declares a running call of its own stuck in its drain: seat w's slot shows the
//   record in `current_of[h]` and `call_started_ns` is older than the call's stuck_after
//   (or, past the shutdown's deadline, host h gives it up). Then:
//   1. host h: CAS record running -> stuck. Failing means the call just finished: nothing
//      to do. Winning means the worker's own CAS running -> done will fail, so the worker
//      will never hand this record back nor claim another call.
//   2. host h: delivers errc::stuck (errc::timed_out if the call's deadline has passed,
//      errc::cancelled when given up) at once, unless a deadline already delivered it, and
//      destroys the handler (its captures are h's); the record leaves h's count.
//   3. host h, under seats_mutex_ (retire_seat): marks the slot retired with the record,
//      links it into the pool's retired list, and puts a fresh slot with a fresh thread in
//      the seat (published before the thread starts). The calls queued for the seat are in
//      the hosts' rings, which belong to the seat: the fresh worker (and thieves) take them
//      as they are. If no thread can start, the seat keeps its retired slot and the next
//      drain of any host retries (tend_seats).
//   4. worker, when the stuck task returns: its CAS fails; it touches nothing but its
//      slot (kept alive by its own shared_ptr) and the record, and sets `handoff`
//      (exchange, acq_rel). If it was first, it sets seats_need_care and the next host to
//      drain (tend_seats, under seats_mutex_) joins the thread and frees the record; if
//      the pool was first (step 5), the worker destroys the record itself. Either way the
//      handler is not called again and the record is freed exactly once, to the heap
//      (call_allocator::destroy_orphan: its host's free list is that host's only).
//   5. the pool, at shutdown: for each retired slot whose task has not returned it sets
//      `handoff` first and detaches the thread: the record is then the thread's, freed if
//      the task ever returns, and reported (shutdown_report, pool_stats.retired_running).
//   A retired slot itself stays in the retired list until shutdown, since a thief may still
//   hold a pointer it read from the seat before the swap. The retired worker never touches
//   a ring again (it is inside its stuck task, then only in its slot).
#include <memory>
#include <string>
#include <system_error>
#include <thread>

#include "call_allocator.hpp"
#include "invariant.hpp"
#include "pool_impl.hpp"

namespace knit::detail {

// The first slot and thread of every seat. A thread that cannot start stops the ones
// already running and rethrows (the constructor fails).
void pool_impl::start_workers() {
  const unsigned n = shared_.options.threads;
  shared_.seat_count = n;
  shared_.seats = std::make_unique<std::atomic<worker_slot*>[]>(n);
  slots_.reserve(n);
  for (unsigned i = 0; i < n; ++i) {
    slots_.push_back(std::make_shared<worker_slot>(shared_.options.max_hosts));
    shared_.seats[i].store(slots_[i].get(), std::memory_order_relaxed);
  }
  for (unsigned i = 0; i < n; ++i) {  // a thread's start publishes the seats above
    try {
      slots_[i]->thread = start_worker(shared_, slots_[i], i);
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

// Step 3, on the thread of the host that gave the record up (host_state::give_up_on).
void pool_impl::retire_seat(unsigned seat, worker_slot* slot, call_base* stuck) noexcept {
  std::lock_guard lock(seats_mutex_);
  if (seat >= shared_.seat_count) return retire_lent(seat - shared_.seat_count, slot, stuck);
  // The stuck call runs on `slot`, so nobody else retired it: it still holds the seat.
  KNIT_ASSERT(slots_[seat].get() == slot && !slot->retired && slot->stuck_record == nullptr);
  slot->retired = true;
  slot->stuck_record = stuck;
  ++retirements_;
  retired_running_.store(retired_running_.load(std::memory_order_relaxed) + 1,
                         std::memory_order_relaxed);
  slot->next_retired = std::move(retired_head_);
  retired_head_ = slots_[seat];
  if (seats_closed_) return;  // the workers are being stopped: step 5 takes it
  if (std::shared_ptr<worker_slot> fresh = start_fresh_slot(seat, *slot)) {
    slots_[seat] = std::move(fresh);  // the retired list keeps the old slot alive
  } else {
    shared_.seats_need_care.store(true, std::memory_order_relaxed);  // retried by a drain
  }
}

// Any host's drain once seats_need_care is set: step 4's collection, and a retry for each
// seat whose replacement could not start.
void pool_impl::tend_seats() noexcept {
  // Partner: the release stores of the flag (worker.cpp hand_over_stuck, retire_seat).
  if (!shared_.seats_need_care.exchange(false, std::memory_order_acquire)) return;
  std::lock_guard lock(seats_mutex_);
  collect_handoffs();
  if (seats_closed_) return;
  for (unsigned i = 0; i < slots_.size(); ++i) {
    if (!slots_[i]->retired) continue;
    std::shared_ptr<worker_slot> fresh = start_fresh_slot(i, *slots_[i]);
    if (!fresh) {
      shared_.seats_need_care.store(true, std::memory_order_relaxed);
      continue;
    }
    slots_[i] = std::move(fresh);
  }
}

// A fresh slot and thread for seat `i`, published before the thread starts; null (the seat
// keeps `old`) if either cannot be had. Under seats_mutex_.
std::shared_ptr<worker_slot> pool_impl::start_fresh_slot(unsigned i, worker_slot& old) noexcept {
  try {
    auto fresh = std::make_shared<worker_slot>(shared_.options.max_hosts);
    fresh->counters.carry_over(old.counters);
    // The seat is published before the thread starts (interleaving
    // "replacement_parks_before_its_seat_is_published", docs/many-hosts.md): a host rings
    // the bell of the slot it reads from the seat after its fence, so that must be the
    // slot whose worker may park. The fence orders this store before that worker's park
    // fence. Partner: seat()'s acquire load.
    shared_.seats[i].store(fresh.get(), std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    try {
      fresh->thread = start_worker(shared_, fresh, i);
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

// Step 4: a stuck task returned; join its thread and free its record. Under seats_mutex_.
void pool_impl::collect_handoffs() noexcept {
  for (worker_slot* w = retired_head_.get(); w; w = w->next_retired.get()) {
    // Partner: the retired worker's acq_rel exchange in hand_over_stuck (worker.cpp).
    if (!w->stuck_record || !w->handoff.load(std::memory_order_acquire)) continue;
    if (w->thread.joinable()) w->thread.join();  // it ends right after the handoff
    call_allocator::destroy_orphan(w->stuck_record);
    w->stuck_record = nullptr;
    KNIT_ASSERT(retired_running_.load(std::memory_order_relaxed) > 0);
    retired_running_.store(retired_running_.load(std::memory_order_relaxed) - 1,
                           std::memory_order_relaxed);
  }
}

// Shutdown step 4 (knit/pool.hpp), and step 5 of "Retiring a worker".
void pool_impl::stop_workers(shutdown_report& report) noexcept {
  std::lock_guard lock(seats_mutex_);
  seats_closed_ = true;
  // Writer: the pool, once every record came back; partner: each worker's acquire load
  // after its park fence (worker.cpp run() and park()), so a stop is never missed.
  shared_.stopping.store(true, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with each worker's park fence
  for (auto& w : slots_) {
    if (!w->retired) w->bell.wake_if_parked();  // forced even with doorbell=false
  }
  for (auto& w : slots_) {
    if (!w->retired && w->thread.joinable()) w->thread.join();
  }
  join_lent();
  collect_handoffs();
  // Step 5: never join a task that may never return.
  for (worker_slot* w = retired_head_.get(); w; w = w->next_retired.get()) {
    if (!w->stuck_record) continue;
    // Partner: the retired worker's exchange in hand_over_stuck; the second one frees.
    if (w->handoff.exchange(true, std::memory_order_acq_rel)) {  // it returned meanwhile
      if (w->thread.joinable()) w->thread.join();
      call_allocator::destroy_orphan(w->stuck_record);
      retired_running_.store(retired_running_.load(std::memory_order_relaxed) - 1,
                             std::memory_order_relaxed);
    } else {
      w->thread.detach();  // the record is the thread's now
      ++report.threads_detached;
    }
    w->stuck_record = nullptr;
  }
  // Unlink iteratively (a long chain of shared_ptr would recurse in its destructor).
  while (retired_head_) retired_head_ = std::move(retired_head_->next_retired);
}

}  // namespace knit::detail

// pool: the host side, tying together the pieces that have their own files: admission,
// the push into the ring the dispatch rule chose (dispatch_policy.hpp), the id table
// (call_table.hpp), deadlines (deadline_queue.hpp), the backlog, completion delivery, stuck
// calls and worker retirement, cancellation and shutdown (steps in knit/pool.hpp).
//
// Retiring a worker (who may touch a record, and when it is freed)
//   The host declares a running call stuck in drain(): its worker's slot shows the record
//   in `current` and `call_started_ns` is older than the call's stuck_after. Then:
//   1. host: CAS record running -> stuck. Failing means the call just finished: nothing
//      to do. Winning means the worker's own CAS running -> done will fail, so the worker
//      will never push this record into a ring nor claim another call.
//   2. host: delivers errc::stuck (errc::timed_out if the call's deadline has passed) at
//      once, unless a deadline already delivered it, and destroys the handler (its
//      captures are the host's); the record leaves `out_`.
//   3. host: marks the slot retired (dispatch skips it), pops what the worker had pushed
//      into its done ring before the call (ordered by the CAS in 1), links the slot into
//      its retired list, and puts a fresh slot with a fresh thread in the seat. The calls
//      still queued in the retired job ring move on: thieves may take them, and the host
//      pops them itself (job_ring allows any number of consumers) ahead of the backlog.
//   4. worker, when the stuck task returns: its CAS fails; it touches nothing but its
//      slot (kept alive by its own shared_ptr) and the record, and sets `handoff`
//      (exchange, acq_rel). If it was first, the host frees the record when it sees the
//      flag (next drain) and joins the thread; if the host was first, the worker destroys
//      the record itself (operator delete with the allocator's alignment). Either way the
//      handler is not called again and the record is freed exactly once.
//   5. host, at shutdown: for each retired slot whose task has not returned it sets
//      `handoff` first and detaches the thread: the record is then the thread's, freed if
//      the task ever returns, and reported (shutdown_report, pool_stats.retired_running).
//   A retired slot itself stays in the retired list until shutdown, since a thief may still
//   hold a pointer it read from the seat before the swap.
//
// Shutdown with a deadline: calls not started by then are abandoned (errc::cancelled); the
// running ones are given up through the same retirement, without replacement, and their
// threads detached by step 5 unless their task returns first.
#include "knit/pool.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cerrno>
#include <cstdio>
#include <deque>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <poll.h>

#include "call_allocator.hpp"
#include "call_table.hpp"
#include "deadline_queue.hpp"
#include "dispatch_policy.hpp"
#include "knit/detail/fault_injection.hpp"
#include "pool_shared.hpp"
#include "spin_gate.hpp"

namespace knit {
namespace detail {

class pool_impl {
 public:
  explicit pool_impl(const pool_options& options)
      : shared_(options, spin_gate_allows(options)), host_(std::this_thread::get_id()) {
    options.validate();
    const unsigned n = options.threads;
    per_ring_ = std::bit_ceil(std::max<std::size_t>(options.queue_capacity, 1));
    wake_cost_ns_ = static_cast<std::int64_t>(options.wake_cost_us) * 1000;
    snapshots_.resize(n);
    if (options.stuck_after.count() > 0) {
      min_stuck_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(options.stuck_after).count();
    }
    shared_.seat_count = n;
    shared_.seats = std::make_unique<std::atomic<worker_slot*>[]>(n);
    slots_.reserve(n);
    for (unsigned i = 0; i < n; ++i) {
      slots_.push_back(std::make_shared<worker_slot>(per_ring_));
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
    if (worker_sched_requested(options)) await_sched();
  }

  ~pool_impl() {
    if (!stopped_) {
      // Destructor path: may run on another thread (documented); skip the host check.
      host_ = std::this_thread::get_id();
      std::optional<std::chrono::steady_clock::time_point> deadline;
      if (shared_.options.stop_timeout.count() > 0) {
        deadline = std::chrono::steady_clock::now() + shared_.options.stop_timeout;
      }
      const shutdown_report r = shutdown(shutdown_mode::drain, deadline);
      if (r.cancelled_at_deadline + r.abandoned_running + r.threads_detached > 0) {
        std::fprintf(stderr, "knit: pool destroyed past its stop_timeout (%lld ms): %s\n",
                     static_cast<long long>(shared_.options.stop_timeout.count()), r.describe().c_str());
      }
    }
  }

  void check_host(const char* what) const {
    if (std::this_thread::get_id() != host_) {
      throw std::logic_error(std::string("knit::pool::") + what +
                             ": called from a thread other than the pool's host thread (the thread that "
                             "constructed the pool); calls must be made from the host thread");
    }
  }

  std::error_code admit() {
    check_host("submit");
    if (!accepting_) {
      ++stats_.calls_rejected;
      return make_error_code(errc::shut_down);
    }
    if (shared_.options.max_pending != 0 && pending_ >= shared_.options.max_pending) {
      ++stats_.calls_rejected;
      return make_error_code(errc::queue_full);
    }
    return {};
  }

  void* allocate(std::size_t size, std::size_t align, std::uint32_t& block) {
    check_allocation();
    return allocator_.allocate(size, align, block);
  }
  void free_memory(void* p, std::uint32_t block) noexcept { allocator_.free(p, block); }

  // Strong guarantee: every step that may allocate (id table, deadline heap, backlog) runs
  // before anything is counted or published, and a failure undoes the earlier ones; the
  // caller (pool::submit) then destroys the record and rethrows.
  call_id enqueue(call_base* c, const call_options& options) {
    // 1. An id-table slot (call_table.hpp: reused slots, stale ids miss, release never
    //    allocates).
    const call_table::reservation slot = calls_.reserve();
    c->id = slot.id;
    const auto stuck = options.stuck_after.count() > 0 ? options.stuck_after : shared_.options.stuck_after;
    c->stuck_after_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(stuck).count();
    // 2. The deadline. If a later step fails, its heap entry goes stale: find() misses it.
    if (options.timeout.count() > 0) {
      c->deadline = std::chrono::steady_clock::now() + options.timeout;
      try {
        deadlines_.push(c->deadline, c->id);
      } catch (...) {
        calls_.undo(slot);
        throw;
      }
    }
    // 3. A ring, or the backlog (keeps submission order: nothing overtakes the backlog).
    if (!backlog_.empty() || !dispatch(c)) {
      try {
        check_allocation();
        backlog_.push_back(c);
      } catch (...) {
        calls_.undo(slot);
        throw;
      }
      ++stats_.calls_backlogged;
    }
    // Nothing below can fail.
    calls_.commit(slot, c);
    ++pending_;
    ++stats_.calls_submitted;
    if (c->stuck_after_ns > 0 && (min_stuck_ns_ == 0 || c->stuck_after_ns < min_stuck_ns_)) {
      min_stuck_ns_ = c->stuck_after_ns;
    }
    return c->id;
  }

  bool cancel(call_id id) {
    check_host("cancel");
    call_base* c = calls_.find(id);
    if (!c) return false;
    call_state expected = call_state::queued;
    if (!c->state.compare_exchange_strong(expected, call_state::abandoned, std::memory_order_acq_rel)) {
      return false;  // running or done: it completes normally
    }
    ++stats_.calls_cancelled;
    deliver(c, make_error_code(errc::cancelled));
    // A worker that pops it hands it back unrun; from the backlog (or a retired ring) the
    // host frees it when it gets there.
    return true;
  }

  std::size_t drain(bool reset_doorbell = true) {
    check_host("drain");
    if (draining_) return 0;  // a handler called drain(): the outer round finishes the job
    draining_ = true;
    std::size_t delivered = 0;
    try {
      if (reset_doorbell) shared_.host_bell.reset();
      std::size_t returned = 0;
      for (auto& w : slots_) {
        if (!w->retired) delivered += pop_done(*w, returned);
      }
      if (returned > 0) ++stats_.completion_batches;
      if (!deadlines_.empty() || (min_stuck_ns_ > 0 && out_ > 0)) {  // clock read only when needed
        const auto now = std::chrono::steady_clock::now();
        if (!deadlines_.empty()) delivered += expire_deadlines(now);
        if (min_stuck_ns_ > 0 && out_ > 0) delivered += check_stuck(now);
      }
      if (retired_head_) {
        collect_handoffs();
        flush_retired_rings();
      }
      if (needs_replacement_) replace_retired_seats();
      if (!backlog_.empty()) flush_backlog();
    } catch (...) {
      draining_ = false;
      throw;
    }
    draining_ = false;
    return delivered;
  }

  std::optional<std::chrono::steady_clock::time_point> next_deadline() {
    std::optional<std::chrono::steady_clock::time_point> best =
        deadlines_.earliest_live([this](call_id id) { return calls_.find(id) != nullptr; });
    if (min_stuck_ns_ > 0 && out_ > 0) {
      // A running call becomes stuck at started + its limit; a call not running yet, no
      // sooner than now + the smallest limit in use (an early wake-up only costs a drain).
      auto consider = [&](std::chrono::steady_clock::time_point t) {
        if (!best || t < *best) best = t;
      };
      std::size_t running = 0;
      for (auto& w : slots_) {
        if (w->retired) continue;
        call_base* c = w->current.load(std::memory_order_acquire);
        if (!c) continue;
        ++running;
        const std::int64_t started = w->call_started_ns.load(std::memory_order_relaxed);
        if (started != 0 && c->stuck_after_ns > 0) consider(from_ns(started + c->stuck_after_ns));
      }
      if (out_ > running) consider(std::chrono::steady_clock::now() + std::chrono::nanoseconds(min_stuck_ns_));
    }
    return best;
  }

  shutdown_report shutdown(shutdown_mode mode, std::optional<std::chrono::steady_clock::time_point> deadline) {
    check_host("shutdown");
    shutdown_report report;
    if (stopped_) return report;
    if (draining_) throw std::logic_error("knit::pool::shutdown: called from inside a completion handler");
    accepting_ = false;  // step 1
    if (mode == shutdown_mode::cancel) abandon_queued();  // step 2
    // Step 3: every accepted call delivered and every record back from the workers, or,
    // past the deadline, abandoned.
    for (;;) {
      drain();
      if (pending_ == 0 && out_ == 0 && backlog_.empty()) break;
      const auto now = std::chrono::steady_clock::now();
      int timeout_ms = -1;
      if (deadline && now >= *deadline) {
        report.deadline_passed = true;
        report.cancelled_at_deadline += abandon_queued();
        report.abandoned_running += give_up_running();
        // What is left: abandoned records on their way back from live workers (they skip
        // them at once), or a call that a worker claimed a moment ago (next round).
        timeout_ms = 1;
      } else {
        auto wake = next_deadline();
        if (deadline && (!wake || *deadline < *wake)) wake = deadline;
        if (wake) {
          auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*wake - now);
          timeout_ms = static_cast<int>(std::clamp<long long>(left.count() + 1, 0, 60'000));
        }
      }
      pollfd p{shared_.host_bell.fd(), POLLIN, 0};
      ::poll(&p, 1, timeout_ms);
    }
    stop_workers(report);  // step 4
    return report;
  }

  pool_stats stats() const {
    pool_stats s = stats_;
    s.threads = static_cast<unsigned>(slots_.size());
    s.retired_running = retired_running_;
    for (const auto& w : slots_) s.workers.push_back(w->counters.snapshot());
    return s;
  }

  const pool_options& options() const noexcept { return shared_.options; }
  int completion_fd() const noexcept { return shared_.host_bell.fd(); }
  std::size_t pending() const noexcept { return pending_; }
  std::chrono::nanoseconds call_time_estimate() const noexcept {
    return std::chrono::nanoseconds(call_ns_estimate_);
  }
  bool accepting() const noexcept { return accepting_; }

 private:
  static std::chrono::steady_clock::time_point from_ns(std::int64_t ns) {
    return std::chrono::steady_clock::time_point(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::nanoseconds(ns)));
  }

  // The spin gate's CPU count (spin_gate.hpp), read on the host thread before any worker
  // exists; only when the gate is on and there is a budget to gate.
  static bool spin_gate_allows(const pool_options& options) {
    if (!options.effective_spin_gate() || options.effective_spin_us() == 0) return true;
    return host_leaves_a_cpu_for_spinning(options);
  }

  // Waits until every first worker has applied worker_nice / worker_sched
  // (worker_sched.hpp); if one could not, stops them all and throws, naming the setting.
  void await_sched() {
    for (unsigned i = 0; i < slots_.size(); ++i) {
      worker_slot& w = *slots_[i];
      while (!w.sched_applied.load(std::memory_order_acquire)) w.sched_applied.wait(false, std::memory_order_acquire);
      if (w.sched_error.error == 0) continue;
      char text[320];
      w.sched_error.format(text, sizeof text, shared_.options, i);
      const int error = w.sched_error.error;
      shutdown_report ignored;
      stop_workers(ignored);
      throw std::system_error(error, std::generic_category(), std::string("knit::pool: ") + text);
    }
  }

  // Pops one worker's done ring: delivers and frees each record. If the worker parked for
  // want of room there, wakes it (Dekker with worker.cpp park(): our pops, then a seq_cst
  // fence, then its flag; it stores the flag, fences, then re-checks the ring).
  std::size_t pop_done(worker_slot& w, std::size_t& returned) {
    std::size_t delivered = 0;
    bool popped = false;
    call_base* c;
    while (w.done.try_pop(c)) {
      popped = true;
      ++returned;
      --out_;
      if (c->run_ns != 0) {  // it ran: fold its duration into the estimate (EWMA, 1/8)
        call_ns_estimate_ += (static_cast<std::int64_t>(c->run_ns) - call_ns_estimate_) / 8;
      }
      if (!c->delivered) {
        deliver(c, {});
        ++delivered;
      }
      destroy(c);
    }
    if (popped) {
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (w.waiting_for_room.load(std::memory_order_relaxed)) w.bell.wake_if_parked();
    }
    return delivered;
  }

  // Chooses a worker ring (dispatch_policy.hpp: the rule and why) and pushes. Returns false
  // if no ring can take the call now. The snapshots are built in the rule's scan order and
  // only as far as it reads them: no more loads than the rule needs, no clock read unless
  // a worker is in a call, and nothing allocated (snapshots_ is sized once).
  bool dispatch(call_base* c) {
    const unsigned n = static_cast<unsigned>(slots_.size());
    dispatch_inputs in;
    in.call_ns_estimate = call_ns_estimate_;
    in.wake_cost_ns = wake_cost_ns_;
    in.start = next_;
    for (unsigned k = 0; k < n; ++k) {
      const unsigned i = (next_ + k) % n;
      worker_slot& w = *slots_[i];
      worker_snapshot& s = snapshots_[i];
      s.retired = w.retired;
      if (s.retired) continue;
      s.depth = w.jobs.producer_size();
      s.capacity = w.jobs.capacity();
      if (!reads_state(s)) continue;
      s.state = w.bell.state();
      if (ends_scan(s)) break;
      s.call_started_ns = reads_call_start(s, in.wake_cost_ns) ? w.call_started_ns.load(std::memory_order_relaxed) : 0;
      if (s.call_started_ns != 0 && in.now_ns == 0) in.now_ns = steady_now_ns();
    }
    const dispatch_choice choice = choose_worker(snapshots_, in);
    if (choice.worker < 0) return false;  // every ring is full
    const unsigned chosen = static_cast<unsigned>(choice.worker);
    worker_slot& w = *slots_[chosen];
    if (!w.jobs.try_push(c)) return false;  // cannot happen: depth < capacity and we are the only producer
    ++out_;
    next_ = (chosen + 1) % n;
    if (shared_.options.doorbell) {
      std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with the worker's park fence
      if (w.bell.wake_if_parked()) ++stats_.host_wakes;
    }
    return true;
  }

  void flush_backlog() {
    while (!backlog_.empty()) {
      call_base* c = backlog_.front();
      if (c->state.load(std::memory_order_relaxed) == call_state::abandoned) {
        backlog_.pop_front();  // cancelled or timed out while waiting: already delivered
        destroy(c);
        continue;
      }
      if (!dispatch(c)) return;
      backlog_.pop_front();
    }
  }

  std::size_t expire_deadlines(std::chrono::steady_clock::time_point now) {
    std::size_t n = 0;
    while (const call_id id = deadlines_.pop_due(now)) {
      call_base* c = calls_.find(id);
      if (!c) continue;  // stale: delivered already
      // Queued: abandon it so no worker runs it. Running: let it finish, discard the result.
      call_state expected = call_state::queued;
      c->state.compare_exchange_strong(expected, call_state::abandoned, std::memory_order_acq_rel);
      ++stats_.calls_timed_out;
      deliver(c, make_error_code(errc::timed_out));
      ++n;
    }
    return n;
  }

  // Retires every worker whose call has run past its stuck_after ("Retiring a worker").
  std::size_t check_stuck(std::chrono::steady_clock::time_point now_tp) {
    const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(now_tp.time_since_epoch()).count();
    std::size_t delivered = 0;
    for (unsigned i = 0; i < slots_.size(); ++i) {
      worker_slot& w = *slots_[i];
      if (w.retired) continue;
      // Acquire pairs with the worker's release store of `current`: call_started_ns is at
      // least this call's start, and the record is alive (it has not come back yet).
      call_base* c = w.current.load(std::memory_order_acquire);
      if (!c || c->stuck_after_ns <= 0) continue;
      const std::int64_t started = w.call_started_ns.load(std::memory_order_relaxed);
      if (started == 0 || now - started < c->stuck_after_ns) continue;
      const bool past_deadline = c->deadline <= now_tp;
      const bool was_delivered = c->delivered;
      if (retire(i, c, make_error_code(past_deadline ? errc::timed_out : errc::stuck), true) && !was_delivered) {
        ++delivered;
      }
    }
    return delivered;
  }

  // Steps 1-3 of "Retiring a worker". Returns false if the call finished first.
  bool retire(unsigned i, call_base* c, std::error_code ec, bool replace) {
    call_state expected = call_state::running;
    if (!c->state.compare_exchange_strong(expected, call_state::stuck, std::memory_order_acq_rel)) return false;
    worker_slot& w = *slots_[i];
    w.retired = true;
    w.stuck_record = c;
    --out_;
    ++retired_running_;
    ++stats_.calls_stuck;
    if (!c->delivered) {
      if (ec == errc::timed_out) ++stats_.calls_timed_out;
      deliver(c, ec);
    }
    c->drop_handler();  // the handler's captures are the host's: never destroyed by the worker
    std::size_t returned = 0;
    pop_done(w, returned);  // what it finished before this call (ordered by our CAS)
    w.next_retired = std::move(retired_head_);
    retired_head_ = slots_[i];
    if (replace) {
      needs_replacement_ = true;
      replace_retired_seats();
    }
    return true;
  }

  // Gives every retired seat a fresh slot and thread. If that fails (no memory, no more
  // threads), the seat keeps its retired slot (dispatch skips it) and the next drain retries.
  void replace_retired_seats() noexcept {
    needs_replacement_ = false;
    for (unsigned i = 0; i < slots_.size(); ++i) {
      if (!slots_[i]->retired) continue;
      try {
        auto fresh = std::make_shared<worker_slot>(per_ring_);
        fresh->counters.carry_over(slots_[i]->counters);
        fresh->thread = std::thread(worker_main, std::ref(shared_), fresh, i);
        shared_.seats[i].store(fresh.get(), std::memory_order_release);  // thieves see it from now
        slots_[i] = std::move(fresh);  // the retired list keeps the old slot alive
        ++stats_.workers_replaced;
      } catch (...) {
        needs_replacement_ = true;
      }
    }
  }

  // Step 4 of "Retiring a worker", host side: a stuck task returned; free its record.
  void collect_handoffs() noexcept {
    if (retired_running_ == 0) return;
    for (worker_slot* w = retired_head_.get(); w; w = w->next_retired.get()) {
      if (!w->stuck_record || !w->handoff.load(std::memory_order_acquire)) continue;
      if (w->thread.joinable()) w->thread.join();  // it ends right after the handoff
      destroy(w->stuck_record);
      w->stuck_record = nullptr;
      --retired_running_;
    }
  }

  // Moves the calls left in retired job rings to live workers, oldest first and ahead of
  // the backlog (they were dispatched before anything in it). A call that finds no room
  // waits in the slot's `held` until the next round.
  void flush_retired_rings() {
    for (worker_slot* w = retired_head_.get(); w; w = w->next_retired.get()) {
      for (;;) {
        call_base* c = w->held;
        w->held = nullptr;
        if (!c && !w->jobs.try_pop(c)) break;
        if (c->state.load(std::memory_order_relaxed) == call_state::abandoned) {
          --out_;  // already delivered (cancel, deadline, shutdown)
          destroy(c);
          continue;
        }
        --out_;  // dispatch() counts it again
        if (!dispatch(c)) {
          ++out_;
          w->held = c;
          return;
        }
      }
    }
  }

  // Abandons every call not yet running; its handler gets errc::cancelled.
  std::size_t abandon_queued() {
    std::size_t n = 0;
    calls_.for_each([&](call_base* c) {
      if (c->delivered) return;
      call_state expected = call_state::queued;
      if (c->state.compare_exchange_strong(expected, call_state::abandoned, std::memory_order_acq_rel)) {
        ++stats_.calls_cancelled;
        deliver(c, make_error_code(errc::cancelled));
        ++n;
      }
    });
    return n;
  }

  // Past shutdown's deadline: retires every worker that is running a call, without
  // replacement (its thread is detached in stop_workers if the task has not returned).
  std::size_t give_up_running() {
    std::size_t n = 0;
    for (unsigned i = 0; i < slots_.size(); ++i) {
      worker_slot& w = *slots_[i];
      if (w.retired) continue;
      call_base* c = w.current.load(std::memory_order_acquire);
      if (!c) continue;
      const bool was_delivered = c->delivered;
      if (retire(i, c, make_error_code(errc::cancelled), false)) {
        if (!was_delivered) ++stats_.calls_cancelled;
        ++n;
      }
    }
    return n;
  }

  void deliver(call_base* c, std::error_code ec) noexcept {
    c->delivered = true;
    --pending_;
    ++stats_.calls_completed;
    calls_.release(c->id);  // never allocates
    if (!ec && c->threw) ++stats_.calls_failed;
    c->deliver(ec);
  }

  void destroy(call_base* c) noexcept {
    const std::uint32_t block = c->block_size;
    c->destroy();
    allocator_.free(c, block);
  }

  void stop_workers(shutdown_report& report) noexcept {
    shared_.stopping.store(true, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with each worker's park fence
    for (auto& w : slots_) {
      if (!w->retired) w->bell.wake_if_parked();  // forced even with doorbell=false
    }
    for (auto& w : slots_) {
      if (!w->retired && w->thread.joinable()) w->thread.join();
    }
    // Step 5 of "Retiring a worker": never join a task that may never return.
    for (worker_slot* w = retired_head_.get(); w; w = w->next_retired.get()) {
      if (!w->stuck_record) continue;
      if (w->handoff.exchange(true, std::memory_order_acq_rel)) {  // it returned meanwhile
        if (w->thread.joinable()) w->thread.join();
        destroy(w->stuck_record);
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

  pool_shared shared_;
  std::thread::id host_;
  call_allocator allocator_;
  std::vector<std::shared_ptr<worker_slot>> slots_;  // slots_[i] is seat i's slot (host's view)
  std::shared_ptr<worker_slot> retired_head_;        // retired slots, newest first
  call_table calls_;                        // accepted calls by id, until delivered
  std::deque<call_base*> backlog_;          // accepted, waiting for ring space
  deadline_queue deadlines_;                // call deadlines, earliest first (stale entries lazily dropped)
  std::size_t pending_ = 0;                 // accepted, handler not called yet
  std::size_t out_ = 0;                     // records in job rings or held by live workers
  std::size_t per_ring_ = 0;
  std::size_t retired_running_ = 0;         // retired slots whose stuck record is not back
  std::int64_t min_stuck_ns_ = 0;           // smallest stuck_after in use; 0 = detection off
  unsigned next_ = 0;                       // dispatch's scan starts here (round robin)
  std::int64_t call_ns_estimate_ = 0;        // running estimate of one call's duration (dispatch rule 2)
  std::int64_t wake_cost_ns_ = 0;            // options.wake_cost_us in ns
  std::vector<worker_snapshot> snapshots_;   // dispatch's scratch, one per seat
  bool accepting_ = true;
  bool draining_ = false;
  bool stopped_ = false;
  bool needs_replacement_ = false;
  pool_stats stats_;
};

}  // namespace detail

pool::pool(pool_options options) : impl_(std::make_unique<detail::pool_impl>(options)) {}
pool::~pool() = default;

std::error_code pool::admit() { return impl_->admit(); }
void* pool::allocate_call(std::size_t size, std::size_t align, std::uint32_t& block) {
  return impl_->allocate(size, align, block);
}
void pool::free_call_memory(void* memory, std::uint32_t block) noexcept { impl_->free_memory(memory, block); }
call_id pool::enqueue(detail::call_base* c, const call_options& options) { return impl_->enqueue(c, options); }
bool pool::cancel(call_id id) { return impl_->cancel(id); }
int pool::completion_fd() const noexcept { return impl_->completion_fd(); }
std::size_t pool::drain() { return impl_->drain(); }
std::size_t pool::poll() { return impl_->drain(false); }
std::size_t pool::pending() const noexcept { return impl_->pending(); }
std::chrono::nanoseconds pool::call_time_estimate() const noexcept { return impl_->call_time_estimate(); }
std::optional<std::chrono::steady_clock::time_point> pool::next_deadline() const { return impl_->next_deadline(); }
void pool::shutdown(shutdown_mode mode) { impl_->shutdown(mode, std::nullopt); }
shutdown_report pool::shutdown(shutdown_mode mode, std::chrono::steady_clock::time_point deadline) {
  return impl_->shutdown(mode, deadline);
}

std::string shutdown_report::describe() const {
  std::string s = "cancelled " + std::to_string(cancelled_at_deadline) + " calls not started by the deadline, abandoned " +
                  std::to_string(abandoned_running) + " running calls, detached " +
                  std::to_string(threads_detached) + " worker threads still running their task";
  return s;
}
bool pool::accepting() const noexcept { return impl_->accepting(); }
pool_stats pool::stats() const { return impl_->stats(); }
const pool_options& pool::options() const noexcept { return impl_->options(); }
std::string pool::describe() const { return impl_->options().describe(); }

}  // namespace knit

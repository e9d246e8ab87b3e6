// host_state: a host's own steps, the same for host 0 and every attached host (protocol in
// host_state.hpp): admission, enqueue, dispatch into its rings (the rule is
// dispatch_policy.hpp's), drain (completions, deadlines, stuck calls, backlog), cancel,
// giving up, leaving and host 0's part of shutdown. The seats are the pool's
// (worker_seats.cpp): a host that finds a stuck call asks the pool to retire its worker.
#include "host_state.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <poll.h>

#include "call_placement_steps.hpp"
#include "call_state.hpp"
#include "fault_injection.hpp"
#include "invariant.hpp"
#include "pool_impl.hpp"
#include "process/process_ring.hpp"
#include "stuck_scan.hpp"

namespace knit::detail {

host_state::host_state(pool_impl& owner, pool_shared& shared, unsigned index, std::size_t per_ring)
    : owner_(owner), shared_(shared), index_(index) {
  rings_.reserve(shared.seat_count);
  for (unsigned w = 0; w < shared.seat_count; ++w) {
    rings_.push_back(std::make_unique<job_ring<call_base*>>(per_ring));
  }
  snapshots_.resize(shared.seat_count);
  wake_cost_ns_ = static_cast<std::int64_t>(shared.options.wake_cost_us) * 1000;
}

namespace {
std::int64_t to_ns(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}
}  // namespace

host_state::~host_state() {
  // The pool is going away with every worker joined: whatever is left was never claimed.
  for (auto& r : rings_) {
    call_base* c;
    while (r->try_pop(c)) allocator_.destroy(c);
  }
}

void host_state::attach() noexcept {
  accepting_ = true;
  bell_.reset();  // a previous host at this index may have left it signalled
  if (!ring_) {
    ring_failure_.clear();
    try {
      ring_ = process_ring::make_if_tasks(bell_.fd(), shared_.seat_count, shared_.options,
                                          counters_.ring_calls_stuck);
    } catch (const std::exception& e) {  // no epoll fd: this host's process calls fail, saying why
      ring_failure_ = e.what();
    } catch (...) {
      ring_failure_ = "unknown error";
    }
    if (ring_) ring_fd_ = ring_->fd();
  }
}

bool host_state::accepting() const noexcept {
  return accepting_ && !shared_.closed.load(std::memory_order_acquire);
}

std::error_code host_state::admit() {
  const std::error_code refused = shared_.admission_refusal(accepting(), pending_);
  if (refused) counters_.calls_rejected.bump();
  return refused;
}

void* host_state::allocate(std::size_t size, std::size_t align, std::uint32_t& block) {
  check_allocation();
  return allocator_.allocate(size, align, block);
}

// Strong guarantee (call_placement_steps.hpp): what may throw runs before anything is
// counted or published.
call_id host_state::enqueue(call_base* c, const call_options& options) {
  const auto stuck =
      options.stuck_after.count() > 0 ? options.stuck_after : shared_.options.stuck_after;
  c->stuck_after_ns = to_ns(stuck);
  const placed_call placed = place_call(calls_, deadlines_, backlog_, c, options.timeout,
                                        [this](call_base* call) { return dispatch(call); });
  if (placed.backlogged) counters_.calls_backlogged.bump();
  return publish(placed, c);
}

// A process call: to this host's ring of worker processes, never to a worker thread's ring
// nor the backlog (the ring queues what no child can take yet).
call_id host_state::enqueue_process(call_base* c, const call_options& options,
                                    const std::shared_ptr<process_job>& job) {
  if (!ring_ && !ring_failure_.empty()) {
    throw std::system_error(
        std::make_error_code(std::errc::resource_unavailable_try_again),
        "knit::submit_process: this host has no process ring: " + ring_failure_);
  }
  if (!ring_) {
    throw std::logic_error(
        "knit::submit_process: this pool was built before any process task was registered "
        "(register every task, then call knit::worker_main, then build the pool)");
  }
  const auto stuck =
      options.stuck_after.count() > 0 ? options.stuck_after : shared_.options.stuck_after;
  c->stuck_after_ns = to_ns(stuck);
  const placed_call placed = place_call(calls_, deadlines_, no_backlog_, c, options.timeout,
                                        [this, &job](call_base* call) {
                                          ring_->accept(call, job);
                                          ++out_;
                                          return true;
                                        });
  return publish(placed, c);
}

call_id host_state::publish(const placed_call& placed, call_base* c) {
  calls_.commit(placed.slot, c);
  ++pending_;
  shared_.publish_pending(index_, pending_);
  counters_.calls_submitted.bump();
  if (c->stuck_after_ns > 0 && (min_stuck_ns_ == 0 || c->stuck_after_ns < min_stuck_ns_)) {
    min_stuck_ns_ = c->stuck_after_ns;
  }
  return c->id;
}

// The dispatch rule over this host's rings (dispatch_policy.hpp), then the mask and wake
// steps of the protocol in host_state.hpp. Returns false if no ring can take the call now.
// The snapshots are built in the rule's scan order and only as far as it reads them: no
// clock read unless a worker is in a call, and nothing allocated (snapshots_ is sized once).
bool host_state::dispatch(call_base* c) {
  const unsigned n = shared_.seat_count;
  dispatch_inputs in;
  in.call_ns_estimate = call_ns_estimate_;
  in.wake_cost_ns = wake_cost_ns_;
  in.start = next_;
  for (unsigned k = 0; k < n; ++k) {
    const unsigned i = (next_ + k) % n;
    worker_snapshot& s = snapshots_[i];
    s.retired = false;  // a seat's rings outlive its retired workers: its next one takes them
    s.depth = rings_[i]->producer_size();
    s.capacity = rings_[i]->capacity();
    if (!reads_state(s)) continue;
    worker_slot& w = shared_.seat(i);
    s.state = w.bell.state();
    if (ends_scan(s)) break;
    s.call_started_ns = reads_call_start(s, in.wake_cost_ns)
                            ? w.call_started_ns.load(std::memory_order_relaxed)
                            : 0;
    if (s.call_started_ns != 0 && in.now_ns == 0) in.now_ns = steady_now_ns();
  }
  const dispatch_choice choice = choose_worker(snapshots_, in);
  if (choice.worker < 0) return false;  // every ring is full
  const unsigned chosen = static_cast<unsigned>(choice.worker);
  // The rule chose a ring with depth < capacity, and this host is its only producer.
  const bool pushed = rings_[chosen]->try_push(c);
  KNIT_ASSERT(pushed);
  if (!pushed) return false;
  ++out_;
  next_ = (chosen + 1) % n;
  // Partner: the worker's fetch_and + fence + ring re-check (claim_in_turn, worker.cpp).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  std::atomic<std::uint64_t>& mask = shared_.seat_pending[chosen].hosts;
  const std::uint64_t bit = std::uint64_t{1} << index_;
  if ((mask.load(std::memory_order_relaxed) & bit) == 0) {
    mask.fetch_or(bit, std::memory_order_acq_rel);
    // Orders the fetch_or before the wake check: pairs with the worker's park fence.
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  if (shared_.options.doorbell) {
    // Ringing the seat's current slot: a replacement publishes its seat before its thread
    // starts (worker_seats.cpp), so a fresh worker that parks is the one we see.
    if (shared_.seat(chosen).bell.wake_if_parked()) counters_.host_wakes.bump();
  }
  return true;
}

bool host_state::complete(call_base* c) noexcept {
  // Guess an empty list (the host takes it whole): then the CAS is the only access, where
  // a load first would fetch the line shared and the CAS fetch it again to own it.
  call_base* head = nullptr;
  do {
    c->next_done = head;
    // Release publishes the record (its result, next_done) to pop_done's exchange.
  } while (!done_head_.compare_exchange_weak(head, c, std::memory_order_release,
                                             std::memory_order_relaxed));
  return bell_.notify();
}

// A record the host ring finished, on this thread, inside drain: pop_done takes it next.
void host_state::complete_quietly(call_base* c) noexcept {
  call_base* head = done_head_.load(std::memory_order_relaxed);
  do {
    c->next_done = head;
  } while (!done_head_.compare_exchange_weak(head, c, std::memory_order_release,
                                             std::memory_order_relaxed));
}

// The last step to end after a leave from inside a handler releases the index: nothing of
// this host is touched after that (another thread may attach at the index at once).
host_state::step_scope::~step_scope() {
  if (--h_.steps_ == 0 && h_.release_deferred_) {
    h_.release_deferred_ = false;
    h_.owner_.free_index(&h_);
  }
}

bool host_state::cancel(call_id id) {
  step_scope scope(*this);
  call_base* c = calls_.find(id);
  if (!c) return false;
  if (!try_move(*c, call_state::queued, call_state::abandoned)) return false;
  counters_.calls_cancelled.bump();
  deliver(c, make_error_code(errc::cancelled));
  return true;
}

std::size_t host_state::drain(bool reset_doorbell) {
  if (draining_) return 0;
  step_scope scope(*this);
  draining_ = true;
  std::size_t delivered = 0;
  try {
    delivered = drain_steps(reset_doorbell);
  } catch (...) {
    draining_ = false;
    throw;
  }
  draining_ = false;
  return delivered;
}

// One round of drain, also run by leave() from inside a drain (each step may be re-entered
// from one of its own handlers: nothing it holds across a handler is a local but the
// record being delivered).
std::size_t host_state::drain_steps(bool reset_doorbell) {
  if (ring_) {
    // The ring's epoll set holds the doorbell (level): its step says whether it was
    // readable, and the reset reads it only then (no EAGAIN read per drain).
    const std::vector<call_base*>& finished = ring_->step();
    if (reset_doorbell) bell_.reset(ring_->bell_rang());
    for (call_base* c : finished) complete_quietly(c);
  } else if (reset_doorbell) {
    bell_.reset();
  }
  std::size_t delivered = pop_done();
  at_interleaving_point(interleaving_point::host_took_completions);
  // Partner: a retired worker's release store after its handoff (worker.cpp).
  if (shared_.seats_need_care.load(std::memory_order_relaxed)) owner_.tend_seats();
  // Clock read only when needed. The stuck test comes after the deadlines: their handlers
  // may have submitted calls.
  if (!deadlines_.empty() || (min_stuck_ns_ > 0 && out_ > 0)) {
    const auto now = std::chrono::steady_clock::now();
    if (!deadlines_.empty()) delivered += expire_deadlines(now);
    if (min_stuck_ns_ > 0 && out_ > 0) delivered += check_stuck(now);
  }
  if (!backlog_.empty()) flush_backlog();
  return delivered;
}

std::size_t host_state::pop_done() {
  // What an enclosing drain took and left (a leave from inside a handler) comes first.
  std::size_t delivered = deliver_taken();
  // A load first: a host polling an empty list keeps the line shared with the workers, where
  // an exchange on every poll would take it from them each time (an RMW of its own).
  if (done_head_.load(std::memory_order_relaxed) == nullptr) return delivered;
  // Partner: the workers' release CAS in complete().
  call_base* list = done_head_.exchange(nullptr, std::memory_order_acquire);
  if (!list) return delivered;
  counters_.completion_batches.bump();
  // Newest first: reverse it so results are delivered in the order they finished.
  KNIT_ASSERT(taken_ == nullptr);
  while (list) {
    call_base* next = list->next_done;
    list->next_done = taken_;
    taken_ = list;
    list = next;
  }
  return delivered + deliver_taken();
}

std::size_t host_state::deliver_taken() noexcept {
  std::size_t delivered = 0;
  while (taken_) {
    call_base* c = taken_;
    taken_ = c->next_done;
    KNIT_ASSERT(out_ > 0);
    --out_;
    if (c->run_ns != 0) {  // it ran: fold its duration into the estimate (EWMA, 1/8)
      call_ns_estimate_ += (static_cast<std::int64_t>(c->run_ns) - call_ns_estimate_) / 8;
    }
    if (!c->delivered) {
      deliver(c, {});
      ++delivered;
    }
    allocator_.destroy(c);
  }
  return delivered;
}

void host_state::flush_backlog() {
  while (!backlog_.empty()) {
    call_base* c = backlog_.front();
    if (c->state.load(std::memory_order_relaxed) == call_state::abandoned) {
      backlog_.pop_front();
      allocator_.destroy(c);
      continue;
    }
    if (!dispatch(c)) return;
    backlog_.pop_front();
  }
}

std::size_t host_state::expire_deadlines(std::chrono::steady_clock::time_point now) {
  std::size_t n = 0;
  while (const call_id id = deadlines_.pop_due(now)) {
    call_base* c = calls_.find(id);
    if (!c) continue;
    try_move(*c, call_state::queued, call_state::abandoned);
    counters_.calls_timed_out.bump();
    deliver(c, make_error_code(errc::timed_out));
    ++n;
  }
  return n;
}

std::optional<std::chrono::steady_clock::time_point> host_state::next_deadline() {
  auto best = deadlines_.earliest_live([this](call_id id) { return calls_.find(id) != nullptr; });
  if (auto stuck = next_stuck_check(shared_, index_, out_, min_stuck_ns_)) {
    if (!best || *stuck < *best) best = stuck;
  }
  if (ring_) {
    if (auto limit = ring_->next_limit(); limit && (!best || *limit < *best)) best = limit;
  }
  return best;
}

// "Stuck calls" in the protocol (host_state.hpp): declares this host's calls that ran past
// their stuck_after; the pool retires their workers.
std::size_t host_state::check_stuck(std::chrono::steady_clock::time_point now_tp) {
  const std::int64_t now = to_ns(now_tp.time_since_epoch());
  std::size_t delivered = 0;
  for_each_running(shared_, index_, [&](const running_call& r) {
    if (!runs_past_its_limit(r, now)) return;
    const bool past_deadline = r.record->deadline <= now_tp;
    const bool was_delivered = r.record->delivered;
    if (!give_up_on(r, make_error_code(past_deadline ? errc::timed_out : errc::stuck))) return;
    counters_.calls_stuck.bump();
    if (!was_delivered) {
      if (past_deadline) counters_.calls_timed_out.bump();
      ++delivered;
    }
  });
  return delivered;
}

shutdown_report host_state::give_up() {
  step_scope scope(*this);
  shutdown_report report;
  report.cancelled_at_deadline = abandon_queued();
  for_each_running(shared_, index_, [&](const running_call& r) {
    const bool was_delivered = r.record->delivered;
    if (!give_up_on(r, make_error_code(errc::cancelled))) return;
    if (!was_delivered) counters_.calls_cancelled.bump();
    ++report.abandoned_running;
  });
  if (ring_) report.abandoned_running += ring_->give_up();
  return report;
}

// Steps 1 and 2 of "Retiring a worker" (worker_seats.cpp) on this host's thread, then the
// pool's step 3. False if the call finished first.
bool host_state::give_up_on(const running_call& r, std::error_code ec) {
  call_base* c = r.record;
  if (!try_move(*c, call_state::running, call_state::stuck)) return false;
  // The worker never writes this entry again (it leaves); a later scan must not find c.
  r.slot->current_of[index_].store(nullptr, std::memory_order_relaxed);
  KNIT_ASSERT(out_ > 0);
  --out_;
  if (!c->delivered) deliver(c, ec);
  c->drop_handler();  // its captures are this thread's: never destroyed elsewhere
  owner_.retire_seat(r.seat, r.slot, c);  // a fresh worker takes the seat now
  return true;
}

std::size_t host_state::abandon_queued() {
  std::size_t n = 0;
  calls_.for_each([&](call_base* c) {
    if (c->delivered) return;
    if (try_move(*c, call_state::queued, call_state::abandoned)) {
      counters_.calls_cancelled.bump();
      deliver(c, make_error_code(errc::cancelled));
      ++n;
    }
  });
  return n;
}

// While leaving: every call in the rings is abandoned; take them back without a worker.
void host_state::reclaim_rings() noexcept {
  for (auto& r : rings_) {
    call_base* c;
    while (r->try_pop(c)) {
      KNIT_ASSERT(c->state.load(std::memory_order_relaxed) == call_state::abandoned);
      KNIT_ASSERT(out_ > 0);
      --out_;
      allocator_.destroy(c);
    }
  }
}

void host_state::leave() {
  accepting_ = false;
  abandon_queued();
  flush_backlog();  // frees what waited there (all abandoned now)
  reclaim_rings();
  // No deadline of its own: only the pool's shutdown's, if one is under way (settle).
  shutdown_report given;
  settle(std::nullopt, given);
  owner_.add_given_up(given);  // the shutdown's report counts it
}

// The deadline of the pool's shutdown, once it has begun (pool_shared::stop_deadline_ns).
std::optional<std::chrono::steady_clock::time_point> host_state::pool_deadline() const noexcept {
  if (!shared_.closed.load(std::memory_order_acquire)) return std::nullopt;
  const std::int64_t ns = shared_.stop_deadline_ns.load(std::memory_order_relaxed);
  if (ns == 0) return std::nullopt;
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::nanoseconds(ns)));
}

void host_state::finish(shutdown_mode mode,
                        std::optional<std::chrono::steady_clock::time_point> deadline,
                        shutdown_report& report) {
  if (mode == shutdown_mode::cancel) abandon_queued();  // step 2
  settle(deadline, report);                             // step 3
}

// Drains until every accepted call is delivered and every record is back, or declared
// stuck; past `deadline` (without one: the pool's shutdown's, once it has begun, read
// again each round), gives up what is left: calls not started are cancelled, running
// ones retired, and the rings taken back (what is left after that are abandoned records
// on their way back from live workers, which skip them at once). Running calls' handlers
// run on this thread. drain_steps, not drain: this may be inside a drain (a handler
// destroying its host).
void host_state::settle(std::optional<std::chrono::steady_clock::time_point> own_deadline,
                        shutdown_report& report) {
  for (;;) {
    drain_steps(true);
    if (pending_ == 0 && out_ == 0 && backlog_.empty()) break;
    const auto deadline = own_deadline ? own_deadline : pool_deadline();
    const auto now = std::chrono::steady_clock::now();
    int timeout_ms = -1;
    if (deadline && now >= *deadline) {
      report.deadline_passed = true;
      const shutdown_report given = give_up();
      report.cancelled_at_deadline += given.cancelled_at_deadline;
      report.abandoned_running += given.abandoned_running;
      flush_backlog();  // all abandoned now
      reclaim_rings();
      timeout_ms = 1;
    } else {
      auto wake = next_deadline();
      if (deadline && (!wake || *deadline < *wake)) wake = deadline;
      if (wake) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*wake - now);
        timeout_ms = static_cast<int>(std::clamp<long long>(left.count() + 1, 0, 60'000));
      }
    }
    at_interleaving_point(interleaving_point::host_sleeps_with_calls);
    pollfd p{completion_fd(), POLLIN, 0};
    ::poll(&p, 1, timeout_ms);
  }
}

void host_state::deliver(call_base* c, std::error_code ec) noexcept {
  KNIT_ASSERT(!c->delivered);
  KNIT_ASSERT(pending_ > 0);
  c->delivered = true;
  --pending_;
  shared_.publish_pending(index_, pending_);
  counters_.calls_completed.bump();
  calls_.release(c->id);
  if (!ec && c->threw) counters_.calls_failed.bump();
  c->deliver(ec);
}

host_stats host_state::stats() const noexcept { return counters_.snapshot(index_); }

std::size_t host_state::ring_bytes() const noexcept {
  std::size_t bytes = 0;
  for (const auto& r : rings_) bytes += r->capacity() * sizeof(call_base*);
  return bytes;
}

// A thread's attached hosts, by pool. Four pools per thread is plenty for an event loop.
namespace {
struct host_binding {
  const void* pool = nullptr;
  host_state* host = nullptr;
};
constexpr int kBindings = 4;
thread_local host_binding tls_bindings[kBindings];
}  // namespace

host_state* bound_host(const void* pool) noexcept {
  for (const host_binding& b : tls_bindings) {
    if (b.pool == pool) return b.host;
  }
  return nullptr;
}

void bind_host(const void* pool, host_state* host) {
  for (host_binding& b : tls_bindings) {
    if (b.pool == pool) {
      b.host = host;
      if (!host) b.pool = nullptr;
      return;
    }
  }
  if (!host) return;
  for (host_binding& b : tls_bindings) {
    if (!b.pool) {
      b = {pool, host};
      return;
    }
  }
  throw std::logic_error("knit::pool_host: this thread is already a host of " +
                         std::to_string(kBindings) + " pools");
}

}  // namespace knit::detail

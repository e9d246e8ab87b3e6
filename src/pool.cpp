// pool: the host side of knit::pool, tying together the pieces that have their own files:
// admission, enqueue (the push into a ring is dispatch.cpp's), the id table
// (call_table.hpp), deadlines (deadline_queue.hpp), the backlog, completion delivery,
// cancellation and shutdown (steps in knit/pool.hpp). The worker seats, stuck calls and
// worker retirement are in worker_seats.cpp (pool_impl.hpp: one class, three files).
//
// Shutdown with a deadline: calls not started by then are abandoned (errc::cancelled); the
// running ones are given up through the same retirement, without replacement, and their
// threads detached (worker_seats.cpp, step 5) unless their task returns first.
#include "knit/pool.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <system_error>

#include <poll.h>

#include "call_placement_steps.hpp"
#include "call_state.hpp"
#include "invariant.hpp"
#include "knit/detail/fault_injection.hpp"
#include "pool_impl.hpp"
#include "spin_gate.hpp"
#include "stuck_scan.hpp"

namespace knit {
namespace detail {
namespace {

// The spin gate's CPU count (spin_gate.hpp), read on the host thread before any worker
// exists; only when the gate is on and there is a budget to gate.
bool spin_gate_allows(const pool_options& options) {
  if (!options.effective_spin_gate() || options.effective_spin_us() == 0) return true;
  return host_leaves_a_cpu_for_spinning(options);
}

std::int64_t to_ns(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

}  // namespace

pool_impl::pool_impl(const pool_options& options)
    : shared_(options, spin_gate_allows(options)), host_token_(this_thread_token()) {
  options.validate();
  per_ring_ = std::bit_ceil(std::max<std::size_t>(options.queue_capacity, 1));
  wake_cost_ns_ = static_cast<std::int64_t>(options.wake_cost_us) * 1000;
  snapshots_.resize(options.threads);
  if (options.stuck_after.count() > 0) min_stuck_ns_ = to_ns(options.stuck_after);
  shared_.seat_pending = std::make_unique<seat_hosts[]>(options.threads);
  shared_.pending_by_host = std::make_unique<host_pending[]>(options.max_hosts);
  shared_.hosts = std::make_unique<std::atomic<host_state*>[]>(options.max_hosts);
  for (unsigned h = 0; h < options.max_hosts; ++h) {
    shared_.hosts[h].store(nullptr, std::memory_order_relaxed);
  }
  host_states_.resize(options.max_hosts);
  host_in_use_.assign(options.max_hosts, false);
  host_in_use_[0] = true;  // the builder
  start_workers();
  if (worker_sched_requested(options)) await_sched();
}

pool_impl::~pool_impl() {
  if (stopped_) return;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (shared_.options.stop_timeout.count() > 0) {
    deadline = std::chrono::steady_clock::now() + shared_.options.stop_timeout;
  }
  // May run on another thread (documented): no host check; nothing shared is rewritten.
  const shutdown_report r = shutdown(shutdown_mode::drain, deadline, true);
  if (r.cancelled_at_deadline + r.abandoned_running + r.threads_detached > 0) {
    std::fprintf(stderr, "knit: pool destroyed past its stop_timeout (%lld ms): %s\n",
                 static_cast<long long>(shared_.options.stop_timeout.count()),
                 r.describe().c_str());
  }
}

void pool_impl::check_host(const char* what) const {
  if (!is_first_host()) {
    throw std::logic_error(std::string("knit::pool::") + what +
                           ": called from a thread other than the pool's host thread (the "
                           "thread that constructed the pool); calls must be made from the "
                           "host thread, or from a thread attached with knit::pool_host or "
                           "knit::asio_host");
  }
}

std::error_code pool_impl::admit() {
  check_host("submit");
  const std::error_code refused = shared_.admission_refusal(accepting_, pending_);
  if (refused) counters_.calls_rejected.bump();
  return refused;
}

void* pool_impl::allocate(std::size_t size, std::size_t align, std::uint32_t& block) {
  check_allocation();
  return allocator_.allocate(size, align, block);
}

// Strong guarantee (call_placement_steps.hpp): what may throw runs before anything is
// counted or published.
call_id pool_impl::enqueue(call_base* c, const call_options& options) {
  const auto stuck =
      options.stuck_after.count() > 0 ? options.stuck_after : shared_.options.stuck_after;
  c->stuck_after_ns = to_ns(stuck);
  const placed_call placed = place_call(calls_, deadlines_, backlog_, c, options.timeout,
                                        [this](call_base* call) { return dispatch(call); });
  if (placed.backlogged) counters_.calls_backlogged.bump();
  // Nothing below can fail.
  calls_.commit(placed.slot, c);
  ++pending_;
  shared_.publish_pending(0, pending_);
  counters_.calls_submitted.bump();
  if (c->stuck_after_ns > 0 && (min_stuck_ns_ == 0 || c->stuck_after_ns < min_stuck_ns_)) {
    min_stuck_ns_ = c->stuck_after_ns;
  }
  return c->id;
}

bool pool_impl::cancel(call_id id) {
  check_host("cancel");
  call_base* c = calls_.find(id);
  if (!c) return false;
  if (!try_move(*c, call_state::queued, call_state::abandoned)) {
    return false;  // running or done: it completes normally
  }
  counters_.calls_cancelled.bump();
  deliver(c, make_error_code(errc::cancelled));
  // A worker that pops it hands it back unrun; from the backlog (or a retired ring) the
  // host frees it when it gets there.
  return true;
}

std::size_t pool_impl::drain(bool reset_doorbell) {
  check_host("drain");
  return drain_round(reset_doorbell);
}

std::size_t pool_impl::drain_round(bool reset_doorbell) {
  if (draining_) return 0;  // a handler called drain(): the outer round finishes the round
  draining_ = true;
  std::size_t delivered = 0;
  try {
    if (reset_doorbell) shared_.host_bell.reset();
    // First: a seat an attached host retired may hold a successor whose done ring has
    // records of ours (it steals), and it must be in slots_ before they are popped.
    take_retire_requests(true);
    std::size_t returned = 0;
    for (auto& w : slots_) {
      if (!w->retired) delivered += pop_done(*w, returned);
    }
    if (returned > 0) counters_.completion_batches.bump();
    // Clock read only when needed. The stuck test is made again after the deadlines: their
    // handlers may have submitted calls.
    if (!deadlines_.empty() || (min_stuck_ns_ > 0 && out_ > 0)) {
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

std::optional<std::chrono::steady_clock::time_point> pool_impl::next_deadline() {
  std::optional<std::chrono::steady_clock::time_point> best =
      deadlines_.earliest_live([this](call_id id) { return calls_.find(id) != nullptr; });
  if (auto stuck = next_stuck_check(shared_, 0, out_, min_stuck_ns_)) {
    if (!best || *stuck < *best) best = stuck;
  }
  return best;
}

shutdown_report pool_impl::shutdown(shutdown_mode mode,
                                    std::optional<std::chrono::steady_clock::time_point> deadline,
                                    bool from_destructor) {
  if (!from_destructor) check_host("shutdown");
  shutdown_report report;
  if (stopped_) return report;
  if (draining_) {
    throw std::logic_error("knit::pool::shutdown: called from inside a completion handler");
  }
  accepting_ = false;  // step 1
  // Attached hosts stop accepting too. Partner: host_state::accepting()'s acquire load.
  shared_.closed.store(true, std::memory_order_release);
  wake_attached_hosts();  // an idle loop asleep on its fd learns of it
  if (mode == shutdown_mode::cancel) abandon_queued();  // step 2
  // Step 3: every accepted call delivered and every record back from the workers, or,
  // past the deadline, abandoned.
  for (;;) {
    drain_round(true);
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
  await_attached_hosts(deadline);  // their calls come back through the workers
  take_retire_requests(false);     // their stuck calls' seats, if no drain took them yet
  stop_workers(report);            // step 4
  return report;
}

pool_stats pool_impl::stats() const {
  // Any host's thread: only counters (single-writer atomics), the seats (atomic pointers to
  // slots that live as long as the pool) and what the two mutexes guard.
  pool_stats s;
  const host_stats mine = counters_.snapshot(0);
  add_host_totals(s, mine);
  s.calls_stuck = mine.calls_stuck;
  {
    std::lock_guard lock(seats_mutex_);
    s.workers_replaced = workers_replaced_;
    s.calls_stuck += attached_retirements_;  // counters_ has the builder's own
  }
  s.threads = shared_.seat_count;
  s.retired_running = retired_running_.load(std::memory_order_relaxed);
  for (unsigned i = 0; i < shared_.seat_count; ++i) {
    s.workers.push_back(shared_.seat(i).counters.snapshot());
  }
  attached_stats(s, mine);
  return s;
}

// Pops one worker's done ring: delivers and frees each record. If the worker parked for
// want of room there, wakes it (Dekker with worker.cpp park(): our pops, then a seq_cst
// fence, then its flag; it stores the flag, fences, then re-checks the ring).
std::size_t pool_impl::pop_done(worker_slot& w, std::size_t& returned) {
  std::size_t delivered = 0;
  bool popped = false;
  call_base* c;
  while (w.done.try_pop(c)) {
    // Only a call the worker finished or skipped comes back through the ring.
    KNIT_ASSERT(c->state.load(std::memory_order_relaxed) == call_state::done ||
                c->state.load(std::memory_order_relaxed) == call_state::abandoned);
    popped = true;
    ++returned;
    KNIT_ASSERT(out_ > 0);
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
    // Partner: the worker's store of waiting_for_room before its park fence (worker.cpp).
    if (w.waiting_for_room.load(std::memory_order_relaxed)) w.bell.wake_if_parked();
  }
  return delivered;
}

void pool_impl::flush_backlog() {
  while (!backlog_.empty()) {
    call_base* c = backlog_.front();
    // Relaxed: only the host writes a record's state before a worker has it.
    if (c->state.load(std::memory_order_relaxed) == call_state::abandoned) {
      backlog_.pop_front();  // cancelled or timed out while waiting: already delivered
      destroy(c);
      continue;
    }
    if (!dispatch(c)) return;
    backlog_.pop_front();
  }
}

std::size_t pool_impl::expire_deadlines(std::chrono::steady_clock::time_point now) {
  std::size_t n = 0;
  while (const call_id id = deadlines_.pop_due(now)) {
    call_base* c = calls_.find(id);
    if (!c) continue;  // stale: delivered already
    // Queued: abandon it so no worker runs it. Running: let it finish, discard the result.
    try_move(*c, call_state::queued, call_state::abandoned);
    counters_.calls_timed_out.bump();
    deliver(c, make_error_code(errc::timed_out));
    ++n;
  }
  return n;
}

// Abandons every call not yet running; its handler gets errc::cancelled.
std::size_t pool_impl::abandon_queued() {
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

void pool_impl::deliver(call_base* c, std::error_code ec) noexcept {
  KNIT_ASSERT(!c->delivered);  // a handler is called exactly once
  KNIT_ASSERT(pending_ > 0);
  c->delivered = true;
  --pending_;
  shared_.publish_pending(0, pending_);
  counters_.calls_completed.bump();
  calls_.release(c->id);  // never allocates
  if (!ec && c->threw) counters_.calls_failed.bump();
  c->deliver(ec);
}

}  // namespace detail

pool::pool(pool_options options) : impl_(std::make_unique<detail::pool_impl>(options)) {}
pool::~pool() = default;

// submit's steps, sent to the calling thread's host (`host` null: the builder); the other
// per-host calls are routed in pool_routing.cpp.
std::error_code pool::admit(detail::host_state*& host) {
  host = impl_->attached_here();
  return host ? host->admit() : impl_->admit();
}
void* pool::allocate_call(detail::host_state* host, std::size_t size, std::size_t align,
                          std::uint32_t& block) {
  return host ? host->allocate(size, align, block) : impl_->allocate(size, align, block);
}
void pool::free_call_memory(detail::host_state* host, void* memory, std::uint32_t block) noexcept {
  if (host) {
    host->free_memory(memory, block);
  } else {
    impl_->free_memory(memory, block);
  }
}
call_id pool::enqueue(detail::host_state* host, detail::call_base* c, const call_options& options) {
  return host ? host->enqueue(c, options) : impl_->enqueue(c, options);
}

void pool::shutdown(shutdown_mode mode) { impl_->shutdown(mode, std::nullopt); }
shutdown_report pool::shutdown(shutdown_mode mode, std::chrono::steady_clock::time_point deadline) {
  return impl_->shutdown(mode, deadline);
}

pool_stats pool::stats() const { return impl_->stats(); }
const pool_options& pool::options() const noexcept { return impl_->options(); }
std::string pool::describe() const { return impl_->options().describe(); }

}  // namespace knit

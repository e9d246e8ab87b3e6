// host_state: a host's own steps, the same for every host (protocol in host_state.hpp):
// this file has its making and attaching, admission, enqueue and dispatch into its rings
// (the rule is dispatch_policy.hpp's), the workers' hand-back, its counters and the
// thread's bindings; host_drain.cpp has drain (completions, deadlines, stuck calls,
// backlog), cancel and delivery; host_stop.cpp giving up, leaving and a host's part of
// the pool's shutdown. The seats are the pool's (worker_seats.cpp): a host that finds a
// stuck call asks the pool to retire its worker.
#include "host_state.hpp"

#include <atomic>
#include <stdexcept>
#include <string>

#include "call_placement_steps.hpp"
#include "fault_injection.hpp"
#include "invariant.hpp"
#include "pool_impl.hpp"
#include "process/process_ring.hpp"

namespace knit::detail {

host_state::host_state(pool_impl& owner, pool_shared& shared, unsigned index, std::size_t per_ring)
    : owner_(owner), shared_(shared), index_(index) {
  rings_.reserve(shared.seat_count);
  for (unsigned w = 0; w < shared.seat_count; ++w) {
    rings_.push_back(std::make_unique<job_ring<call_base*>>(per_ring));
    done_rings_.push_back(std::make_unique<done_ring<call_base*>>());
  }
  out_in_seat_.assign(shared.seat_count, 0);
  seats_out_.assign((shared.seat_count + 63) / 64, 0);
  snapshots_.resize(shared.seat_count);
  owed_.assign(shared.seat_count, 0);
  owed_seats_.reserve(shared.seat_count);  // dispatch's push_back never allocates
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
  // Empty when every host settled (leaving or in the shutdown, each takes back every
  // record); a record finished for a host that did not is freed here, not leaked.
  for (auto& r : done_rings_) {
    call_base* c;
    while (r->try_pop(c)) allocator_.destroy(c);
  }
  for (call_base* c = done_head_.exchange(nullptr, std::memory_order_acquire); c != nullptr;) {
    call_base* next = c->next_done;
    allocator_.destroy(c);
    c = next;
  }
}

void host_state::attach() noexcept {
  accepting_ = true;
  bell_.reset();  // a previous host at this index may have left it signalled
  // Each attachment asks for held checks itself; the one before settled (a drain: flushed).
  KNIT_ASSERT(owed_seats_.empty());
  held_ = held::none;
  if (!ring_) {
    ring_failure_.clear();
    try {
      ring_ = process_ring::make_if_tasks(bell_.fd(), shared_.seat_count, shared_.options,
                                          shared_.unpinned_cpus, counters_);
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
// steps of the protocol in host_state.hpp, at once or, held, at the flush. Returns false if
// no ring can take the call now.
bool host_state::dispatch(call_base* c) {
  const unsigned n = shared_.seat_count;
  const int ring = reads_workers(n) ? choose_ring() : 0;
  if (ring < 0) return false;  // every ring is full
  const unsigned chosen = static_cast<unsigned>(ring);
  c->ring = chosen;  // published with the push; only this host reads it (deliver_taken)
  // Held: bit h of the seat's mask, loaded before the push (relaxed, no fence: a hint).
  // Loaded after it, it could be as old (a store buffer lets the load pass the push), and
  // here a test can make the worker park inside the window (interleaving_point).
  bool bit_clear = false;
  if (held_ != held::none) {
    bit_clear =
        (shared_.seat_pending[chosen].hosts.load(std::memory_order_relaxed) & mask_bit()) == 0;
    at_interleaving_point(interleaving_point::host_loaded_mask_hint);
  }
  // One seat: the push says whether its ring has room, reading the head only when the
  // cached one says full. Else the rule chose a ring with room, and this host is its only
  // producer.
  if (!rings_[chosen]->try_push(c)) {
    KNIT_ASSERT(!reads_workers(n));
    return false;
  }
  ++out_;
  count_out(chosen);
  next_ = (chosen + 1) % n;
  if (held_ == held::none) {
    check_seat(chosen, shared_.options.doorbell);
    return true;
  }
  // Held: a clear bit (its worker parked, or is on its way, since this host last pushed
  // there) is set at once, and then, the fences paid, a worker with a CPU of its own is
  // rung at once too. A set bit (a worker that runs or spins, or a stale load) leaves the
  // whole check to the flush.
  if (held_ == held::checks && bit_clear) {
    check_seat(chosen, shared_.options.doorbell);
    return true;
  }
  if (bit_clear) check_seat(chosen, false);  // held wakes: the bit now, the bell at the flush
  if (!owed_[chosen]) {
    owed_[chosen] = 1;
    owed_seats_.push_back(chosen);
  }
  return true;
}

// The protocol's host column after a push into seat w's ring: the fence, the mask step
// and, with `ring`, the wake check.
void host_state::check_seat(unsigned w, bool ring) noexcept {
  // Partner: the worker's fetch_and + fence + ring re-check (clear_empty_rings, worker.cpp).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  mask_and_wake(w, ring);
}

// The protocol's host column after its fence: set bit h of seat w's mask if it is clear,
// then, with `ring`, wake the seat's worker if it is parked.
void host_state::mask_and_wake(unsigned w, bool ring) noexcept {
  std::atomic<std::uint64_t>& mask = shared_.seat_pending[w].hosts;
  if ((mask.load(std::memory_order_relaxed) & mask_bit()) == 0) {
    mask.fetch_or(mask_bit(), std::memory_order_acq_rel);
    // Orders the fetch_or before the wake check: pairs with the worker's park fence.
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  // Ringing the seat's current slot: a replacement publishes its seat before its thread
  // starts (worker_seats.cpp), so a fresh worker that parks is the one we see.
  if (ring && shared_.seat(w).bell.wake_if_parked()) counters_.host_wakes.bump();
}

// The rule's choice among several seats. The snapshots are built in the rule's scan order
// and only as far as it reads them: no clock read unless a worker is in a call, and nothing
// allocated (snapshots_ is sized once). Returns -1 if every ring is full.
int host_state::choose_ring() noexcept {
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
  return choose_worker(snapshots_, in).worker;
}

bool host_state::hold_wakes(bool on) noexcept {
  const held mode = !on || !shared_.options.wake_at_turn_end ? held::none
                    : shared_.wakes_may_wait_for_turn_end    ? held::wakes
                                                             : held::checks;
  if (mode == held::none) flush_wakes();  // while still holding: what it owes is done
  held_ = mode;
  return mode != held::none;
}

// "Held checks": what dispatch left for the end of the turn: one fence after every push of
// the turn, then each owed seat's mask step and wake check. A clear bit with an empty ring
// needs neither: its worker took every call before it went to park (a wake would find
// nothing to do). The ring is read only then: its head is the line the worker writes.
void host_state::flush_wakes() noexcept {
  KNIT_ASSERT(held_ != held::none || owed_seats_.empty());
  if (owed_seats_.empty()) return;
  // Partner: the worker's fetch_and + fence + ring re-check (clear_empty_rings, worker.cpp).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (const unsigned w : owed_seats_) {
    KNIT_ASSERT(owed_[w]);
    owed_[w] = 0;
    const bool bit_clear =
        (shared_.seat_pending[w].hosts.load(std::memory_order_relaxed) & mask_bit()) == 0;
    if (bit_clear && rings_[w]->producer_size() == 0) continue;
    mask_and_wake(w, shared_.options.doorbell);
  }
  owed_seats_.clear();
}

void host_state::count_out(unsigned w) noexcept {
  if (out_in_seat_[w]++ == 0) seats_out_[w / 64] |= std::uint64_t{1} << (w % 64);
}

void host_state::count_back(std::uint32_t w) noexcept {
  KNIT_ASSERT(w < out_in_seat_.size() && out_in_seat_[w] > 0);
  if (--out_in_seat_[w] == 0) seats_out_[w / 64] &= ~(std::uint64_t{1} << (w % 64));
}

bool host_state::complete(call_base* c, unsigned seat) noexcept {
  // Seat w's worker, with a record from its own ring: done(h, w), the host's counted seat.
  if (seat != kNoSeat && done_rings_[seat]->try_push(c)) return bell_.notify();
  at_interleaving_point(interleaving_point::completion_listed);
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

host_stats host_state::stats() const noexcept { return counters_.snapshot(index_); }

std::size_t host_state::ring_bytes() const noexcept {
  std::size_t bytes = 0;
  for (const auto& r : rings_) bytes += r->capacity() * job_ring<call_base*>::kSlotBytes;
  return bytes + done_rings_.size() * done_ring<call_base*>::bytes();
}

// A thread's attached hosts, by pool. Four pools per thread is plenty for an event loop.
namespace {
struct host_binding {
  const void* pool = nullptr;
  host_state* host = nullptr;
};
constexpr int kBindings = 4;
// initial-exec, as thread_token.cpp's token and for the same reason: read by every submit
// and poll, no __tls_get_addr call in libknit.so.
__attribute__((tls_model("initial-exec"))) thread_local host_binding tls_bindings[kBindings];
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

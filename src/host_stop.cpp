// host_stop: how a host stops: giving up its calls (a stop deadline, pool_host::give_up),
// leaving (~pool_host), and its part of the pool's shutdown when that is called on its
// thread; each ends in settle, which drains until every record is back (protocol in
// host_state.hpp: "Leaving", "Shutdown").
#include <algorithm>
#include <atomic>

#include <poll.h>

#include "call_state.hpp"
#include "fault_injection.hpp"
#include "host_state.hpp"
#include "invariant.hpp"
#include "pool_impl.hpp"
#include "process/process_ring.hpp"
#include "stuck_scan.hpp"

namespace knit::detail {

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
  count_back(c->ring);
  if (!c->delivered) deliver(c, ec);
  c->drop_handler();  // its captures are this thread's: never destroyed elsewhere
  owner_.retire_seat(r.seat, r.slot, c);  // a fresh worker takes the seat now
  return true;
}

// Two passes: every queued call is abandoned before the first handler runs, so a handler
// that unblocks a worker (opens a gate, finishes the call ahead) cannot let the worker start
// a call this cancellation was about to take. cancel() and expire_deadlines deliver at
// once, so a call abandoned and not yet delivered is one of this first pass's.
std::size_t host_state::abandon_queued() {
  std::size_t n = 0;
  calls_.for_each([&](call_base* c) {
    if (!c->delivered && try_move(*c, call_state::queued, call_state::abandoned)) ++n;
  });
  calls_.for_each([&](call_base* c) {
    if (c->delivered || c->state.load(std::memory_order_relaxed) != call_state::abandoned) return;
    counters_.calls_cancelled.bump();
    deliver(c, make_error_code(errc::cancelled));
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
      count_back(c->ring);
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
    drain_steps(doorbell_reset::read);  // its own wait below is poll(2): a readiness watch
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

}  // namespace knit::detail

// host_drain: a host's drain (completions, expired deadlines, stuck calls, then the
// backlog), cancel and delivery, on its own thread (protocol in host_state.hpp). Every step
// may be re-entered from one of its own handlers (a leave inside one): what it holds across
// a handler lives in members, not locals.
#include <algorithm>
#include <atomic>
#include <bit>

#include "call_state.hpp"
#include "fault_injection.hpp"
#include "host_state.hpp"
#include "invariant.hpp"
#include "pool_impl.hpp"
#include "process/process_ring.hpp"
#include "stuck_scan.hpp"

namespace knit::detail {

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
  // Answered: its captures (a connection, a work guard) go now, on this thread, not when the
  // record comes back from the worker that will skip it, which may be long after (a slow
  // call ahead of it) or never wake this host at all (a skipped call signals no one).
  c->drop_handler();
  return true;
}

std::size_t host_state::drain(doorbell_reset reset) {
  if (draining_) return 0;
  step_scope scope(*this);
  draining_ = true;
  std::size_t delivered = 0;
  try {
    delivered = drain_steps(reset);
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
std::size_t host_state::drain_steps(doorbell_reset reset) {
  // Under a watch that fires on every write the eventfd is never read: its counter only
  // grows, one per write (host_doorbell.hpp).
  const bool read = reset == doorbell_reset::read;
  if (ring_) {
    // The ring's epoll set holds the doorbell (edge): its step says whether it rang since
    // the last step, and the reset reads it only then (no EAGAIN read per drain).
    const std::vector<call_base*>& finished = ring_->step();
    if (reset == doorbell_reset::none) {
      ring_->put_back_bell();  // poll() leaves the doorbell as it found it
    } else {
      bell_.reset(read && ring_->bell_rang());
    }
    for (call_base* c : finished) complete_quietly(c);
  } else if (reset != doorbell_reset::none) {
    bell_.reset(read);
  }
  std::size_t delivered = pop_done();
  at_interleaving_point(interleaving_point::host_took_completions);
  // Partner: a retired worker's release store after its handoff (worker.cpp).
  if (shared_.seats_need_care.load(std::memory_order_relaxed)) owner_.tend_seats();
  // Clock read only when needed. The stuck test comes after the deadlines: their handlers
  // may have submitted calls.
  const bool may_lend = shared_.lent_limit > 0 && out_ > 0;
  if (!deadlines_.empty() || (min_stuck_ns_ > 0 && out_ > 0) || may_lend) {
    const auto now = std::chrono::steady_clock::now();
    if (!deadlines_.empty()) delivered += expire_deadlines(now);
    if (min_stuck_ns_ > 0 && out_ > 0) delivered += check_stuck(now);
    // After the stuck check: a worker it retired is no longer held (lent_workers.cpp).
    if (shared_.lent_limit > 0 && out_ > 0) {
      lend_if_starved(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count());
    }
  }
  if (!backlog_.empty()) flush_backlog();
  flush_wakes();  // "Held checks": what this drain's handlers and the backlog submitted
  return delivered;
}

// The done rings of the seats this host has calls out in, then the list (protocol in
// host_state.hpp, "Completions"). Each record is taken out of its ring before its handler
// runs, so a drain re-entered from that handler (a leave) goes on from the next one.
std::size_t host_state::pop_done() {
  // What an enclosing drain took from the list and left (a leave inside a handler) first.
  std::size_t delivered = deliver_taken();
  bool took = false;
  for (std::size_t word = 0; word < seats_out_.size(); ++word) {
    // A copy: a handler may submit (setting bits) or leave (clearing them) meanwhile; a
    // seat cleared since is an empty ring, one set since is the next drain's.
    for (std::uint64_t m = seats_out_[word]; m != 0; m &= m - 1) {
      done_ring<call_base*>& ring = *done_rings_[word * 64 + std::countr_zero(m)];
      // Each record's two lines (what take_back reads, then the handler's result) are
      // asked for once, before it is popped: the first here, each next one while the one
      // before it is delivered. Only this host frees its records, so the pointer is one of
      // its own.
      if (const call_base* first = ring.peek()) ask_for_record(first);
      call_base* c;
      while (ring.try_pop(c)) {
        took = true;
        if (const call_base* next = ring.peek()) ask_for_record(next);
        delivered += take_back(c);
      }
    }
  }
  // A load first: a host polling an empty list keeps the line shared with the workers, where
  // an exchange on every poll would take it from them each time (an RMW of its own).
  call_base* list = done_head_.load(std::memory_order_relaxed);
  if (list != nullptr) {
    // The newest record's two lines are asked for beside the exchange, not behind it.
    ask_for_record(list);
    // Partner: the workers' release CAS in complete().
    list = done_head_.exchange(nullptr, std::memory_order_acquire);
  }
  if (took || list) counters_.completion_batches.bump();
  if (!list) return delivered;
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
    delivered += take_back(c);
  }
  return delivered;
}

std::size_t host_state::take_back(call_base* c) noexcept {
  KNIT_ASSERT(out_ > 0);
  --out_;
  // Taken from that ring (its taker's CAS came before its release in complete()): the
  // ring's depth needs no read of its head line while nothing of ours is left in it.
  if (c->ring != call_base::kNoRing) {
    const bool counted = rings_[c->ring]->producer_saw_taken();
    KNIT_ASSERT(counted);
    (void)counted;
    count_back(c->ring);
  }
  if (c->run_ns != 0) {  // it ran: fold its duration into the estimate (EWMA, 1/8)
    call_ns_estimate_ += (static_cast<std::int64_t>(c->run_ns) - call_ns_estimate_) / 8;
  }
  std::size_t delivered = 0;
  if (!c->delivered) {
    deliver(c, {});
    delivered = 1;
  }
  allocator_.destroy(c);
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
    c->drop_handler();  // answered: its captures go now (cancel(), above, says why)
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
  if (const auto lend = lend_due(std::nullopt)) {  // lent_workers.cpp, "When"
    const std::chrono::steady_clock::time_point at(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::nanoseconds(*lend)));
    if (!best || at < *best) best = at;
  }
  return best;
}

// "Stuck calls" in the protocol (host_state.hpp): declares this host's calls that ran past
// their stuck_after; the pool retires their workers.
std::size_t host_state::check_stuck(std::chrono::steady_clock::time_point now_tp) {
  const std::int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now_tp.time_since_epoch()).count();
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

}  // namespace knit::detail

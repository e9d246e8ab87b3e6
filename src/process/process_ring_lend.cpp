// process_ring: lent children (process_ring.hpp, "Lent children"): when every child of the
// ring holds a call past lend_after and calls wait, one more child from a lent slot's own
// box takes them; it is retired once idle for lend_after.
#include <algorithm>
#include <optional>
#include <utility>

#include "invariant.hpp"
#include "pool_shared.hpp"
#include "process/process_ring.hpp"
#include "process/standby.hpp"

namespace knit::detail {

// Calls wait for a child: in the FIFO, or behind a running call in a lane (a move takes
// them back as soon as a child idles).
bool process_ring::calls_wait() const noexcept {
  if (!queue_.empty()) return true;
  for (const ring_child& c : kids_) {
    for (std::size_t f = 1; f < c.flights.size(); ++f) {
      if (c.flights[f].call && !c.flights[f].taken_back) return true;
    }
  }
  return false;
}

// The moment the ring lends a child (in the past: now), or nothing: calls wait, a lent slot
// is vacant, and every slot in use has a child up whose oldest call has run since
// oldest_since. A slot in use with no child (one starting: a replacement, a lent child)
// or an idle child takes the waiting calls itself: nothing to lend, nothing to time (its
// start, or the next answer, wakes the host).
std::optional<process_ring::steady::time_point> process_ring::lend_due() const noexcept {
  if (lent_now_ >= lent_limit_ || kids_.empty() || !calls_wait()) return std::nullopt;
  steady::time_point due{};
  for (unsigned k = 0; k < kids_.size(); ++k) {
    if (!in_use(k)) continue;
    const ring_child& c = kids_[k];
    if (!c.child || c.dead || c.flights.empty()) return std::nullopt;
    due = std::max(due, c.oldest_since + lend_after_);
  }
  return due;
}

// next_limit's part: the lend moment and each idle lent child's retirement (none while the
// FIFO holds a call: the step that sends it comes first).
std::optional<process_ring::steady::time_point> process_ring::lend_at() const noexcept {
  std::optional<steady::time_point> best = lend_due();
  if (!queue_.empty()) return best;
  for (unsigned k = children_; k < kids_.size(); ++k) {
    const ring_child& c = kids_[k];
    if (!c.lent || !c.child || !c.flights.empty()) continue;
    // Not yet seen idle by a step (idle_since unset): the next step sets it, at once.
    const steady::time_point at =
        c.idle_since == steady::time_point{} ? steady::time_point{} : c.idle_since + lend_after_;
    if (!best || at < *best) best = at;
  }
  return best;
}

// Lends a vacant lent slot when the moment has come: its box (made at its first lend) is
// asked for a child by take_lent, in this same step.
void process_ring::lend_if_starved(steady::time_point now) {
  const std::optional<steady::time_point> due = lend_due();
  if (!due || *due > now) return;
  for (unsigned k = children_; k < kids_.size(); ++k) {
    ring_child& c = kids_[k];
    if (c.lent) continue;
    KNIT_ASSERT(!c.child && c.flights.empty());
    if (!c.box) {
      try {
        // No pool's key is null: always a new worker (a number of its own), never one
        // process_workers started for the pool's own slots.
        c.box = claim_worker(nullptr, lent_options_, cpus_);
      } catch (...) {
        return;  // no memory for a box: asked again at the next step
      }
      c.box->set_listener(starts_.get());
    }
    c.lent = true;
    c.idle_since = {};
    ++lent_now_;
    host_counters_.ring_lent_started.bump();
    return;
  }
}

// Each lent slot with no child takes one from its box when the box holds it (its start
// scheduled at the first ask); a start that failed retires the slot, failing no call.
void process_ring::take_lent() {
  for (unsigned k = children_; k < kids_.size(); ++k) {
    ring_child& c = kids_[k];
    if (!c.lent || c.child) continue;
    try {
      std::optional<child_process> taken = c.box->try_take();
      if (taken) install(k, std::move(*taken));
    } catch (const process_error&) {
      retire_lent(c);
    }
  }
}

// The slot goes vacant: its child (idle, or none) is killed and reaped now; the box stays,
// childless (spare_child off), for the next lend.
void process_ring::retire_lent(ring_child& c) {
  KNIT_ASSERT(c.lent && c.flights.empty() && lent_now_ > 0);
  if (c.child) end_idle_child(c, /*kill=*/true);
  c.lent = false;
  c.idle_since = {};
  --lent_now_;
  host_counters_.ring_lent_retired.bump();
}

// After the step's sends: a lent child still idle with nothing in the FIFO has been idle
// since this step, or is retired once that has lasted lend_after.
void process_ring::retire_idle_lent(steady::time_point now) {
  if (!queue_.empty()) return;  // the next send may take it (lend_at times none meanwhile)
  for (unsigned k = children_; k < kids_.size(); ++k) {
    ring_child& c = kids_[k];
    if (!c.lent || !c.child || c.dead || !c.flights.empty()) continue;
    if (c.idle_since == steady::time_point{}) {
      c.idle_since = now;
    } else if (now - c.idle_since >= lend_after_) {
      retire_lent(c);
    }
  }
}

}  // namespace knit::detail

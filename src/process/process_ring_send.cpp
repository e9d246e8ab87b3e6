// process_ring: sending calls into children's lanes, and taking them back (process_ring.hpp):
// where each call goes (child_choice.hpp), the nonce and the bell, new children from their
// boxes, the host's claim, and the moves off a slow child.
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "call_state.hpp"
#include "invariant.hpp"
#include "process/counters.hpp"
#include "process/process_ring.hpp"
#include "process/slot_bell.hpp"
#include "process/task_registry.hpp"

namespace knit::detail {

void at_ring_point(ring_point where, region_header& h, lane_words& lane);  // process_ring.cpp

// Sends `call` (state queued) into child `c`'s next lane, which is free. False when it was
// finished without a send (abandoned, over the arena, past its deadline).
bool process_ring::send(ring_child& c, queued& q, steady::time_point now) {
  call_base* const call = q.call;
  std::shared_ptr<process_job>& job = q.job;
  child_process& child = *c.child;
  KNIT_ASSERT(c.flights.size() < child.region.lanes());
  KNIT_ASSERT(!q.running || c.flights.empty());
  if (!q.running && call->state.load(std::memory_order_relaxed) == call_state::abandoned) {
    finished_.push_back(call);  // cancelled, or past its deadline, while queued: never run
    return false;
  }
  if (job->bytes.size() > options_.arena_bytes) {
    fail_unsent(call, *job,
                std::make_exception_ptr(process_error(
                    errc::payload_too_large,
                    "knit: process task '" + job->task + "': request of " +
                        std::to_string(job->bytes.size()) + " bytes is over the arena of " +
                        std::to_string(options_.arena_bytes) +
                        " bytes (process_options::arena_bytes); not sent")),
                q.running);
    return false;
  }
  if (now >= job->limits.deadline) {
    fail_unsent(call, *job,
                std::make_exception_ptr(process_error(
                    errc::timed_out, "knit: process task '" + job->task +
                                         "' ran past its deadline before it was sent")),
                q.running);
    return false;
  }
  // The oldest call in a child is running; the ones behind it stay queued.
  const bool oldest = c.flights.empty();
  if (oldest && !q.running && !try_move(*call, call_state::queued, call_state::running)) {
    finished_.push_back(call);  // abandoned just now
    return false;
  }
  const std::optional<std::uint32_t> index = task_registry::instance().find(job->task);
  KNIT_ASSERT(index.has_value());  // submit_process refused an unknown name
  const unsigned k = c.next_lane;
  region_header& h = child.region.header();
  lane_words& lane = child.region.lane(k);
  const std::uint64_t seq = nonces_.next(c.lane_answered[k]);
  child.end->in_call.store(true, std::memory_order_release);  // its death is ours to name
  std::memcpy(child.region.request_arena(k), job->bytes.data(), job->bytes.size());
  store(lane.task_index, index.value_or(~std::uint32_t{0}));
  store(lane.request_bytes, static_cast<std::uint64_t>(job->bytes.size()));
  store(lane.claim, std::uint64_t{0});  // unclaimed: published by the release below
  at_ring_point(ring_point::host_publishing_request, h, lane);
  store(lane.request_seq, seq, std::memory_order_release);
  if (!job->sent) counters().calls.fetch_add(1, std::memory_order_relaxed);  // once a call
  job->sent = true;
  ring_if_sleeping(h.child_sleeping, child.request.get());
  c.next_lane = (k + 1) % child.region.lanes();
  c.flights.push_back({call, job, seq, k});
  ++in_children_;
  c.idle_since = {};  // busy: a lent child's idle time starts again at its next idle step
  if (oldest) {
    c.oldest_since = now;
    c.begin_by = now + options_.begin_timeout;
    if (job->limits.stuck_after > steady::duration::zero()) {
      c.stuck_at = now + job->limits.stuck_after;
    }
  }
  return true;
}

// Slot k's new child, taken from its box.
void process_ring::install(unsigned k, child_process child) {
  ring_child& c = kids_[k];
  c.child = std::move(child);
  c.dead = false;
  c.next_lane = 0;  // a new child starts at lane 0, its answer_seqs at 0
  c.lane_answered.fill(0);
  c.stuck_at = steady::time_point::max();
  c.rings = 0;
  c.answers = 0;
  c.idle_since = {};
  // Held at 1: this host never spins, so the child always rings `answer`.
  store(c.child->region.header().host_sleeping, std::uint32_t{1});
  watch(k);
}

// A slot with no child that takes a new one from its box (a replacement, a spare, a child
// process_workers started, a lent child). A failed start fails `q`'s call: `failed`; a
// lent slot's retires the slot instead (no call waited for that child).
process_ring::ring_child* process_ring::new_child(queued& q, bool& failed) {
  for (unsigned k = 0; k < kids_.size(); ++k) {
    ring_child& c = kids_[k];
    if (c.child || !in_use(k)) continue;
    try {
      std::optional<child_process> taken = c.box->try_take();
      if (!taken) continue;
      install(k, std::move(*taken));
      if (!c.dead) return &c;
    } catch (const process_error& e) {
      if (k >= children_) {
        retire_lent(c);
        continue;
      }
      std::string what = message_of(e);
      if (what.starts_with("knit: ")) what.erase(0, 6);
      fail_unsent(q.call, *q.job,
                  std::make_exception_ptr(
                      process_error(static_cast<errc>(e.code().value()),
                                    "knit: process task '" + q.job->task + "': " + what)),
                  q.running);
      failed = true;
      return nullptr;
    }
  }
  return nullptr;
}

// What child_choice reads of each child.
std::vector<child_view>& process_ring::views(steady::time_point now) {
  for (unsigned i = 0; i < kids_.size(); ++i) {
    const ring_child& c = kids_[i];
    child_view& v = views_[i];
    v.vacant = !in_use(i);
    v.up = c.child && !c.dead;
    v.calls = static_cast<unsigned>(c.flights.size());
    v.lanes = c.child ? c.child->region.lanes() : 0;
    v.movable = 0;
    for (std::size_t f = 0; f < c.flights.size(); ++f) {
      // A call sent again runs alone: nothing is queued behind it (were it the culprit,
      // the calls behind would meet a second death).
      if (c.flights[f].job->resent) v.calls = v.lanes;
      if (f > 0 && c.flights[f].call && !c.flights[f].taken_back) ++v.movable;
    }
    v.running_ns =
        c.flights.empty() || now == steady::time_point{}
            ? 0
            : std::chrono::duration_cast<std::chrono::nanoseconds>(now - c.oldest_since).count();
  }
  return views_;
}

void process_ring::send_queued() {
  const steady::time_point now = steady::now();
  while (!queue_.empty()) {
    queued& q = queue_.front();
    if (!q.running && q.call->state.load(std::memory_order_relaxed) == call_state::abandoned) {
      finished_.push_back(q.call);  // cancelled, or past its deadline, while queued: never run
      queue_.pop_front();
      continue;
    }
    child_choice choice = choose_child(views(now), next_, /*boxes_tried=*/false);
    // A call sent again goes only to an idle child, where it runs alone.
    if (q.job->resent && choice.rule == child_rule::least_busy) return;
    ring_child* to = nullptr;
    if (choice.rule == child_rule::idle) {
      to = &kids_[static_cast<unsigned>(choice.child)];
      next_ = (static_cast<unsigned>(choice.child) + 1) % static_cast<unsigned>(kids_.size());
    } else if (choice.rule == child_rule::new_child) {
      bool failed = false;
      to = new_child(q, failed);
      if (failed) {
        queue_.pop_front();
        continue;
      }
      if (!to && !q.job->resent) {
        choice = choose_child(views(now), next_, /*boxes_tried=*/true);
        if (choice.child >= 0) to = &kids_[static_cast<unsigned>(choice.child)];
      }
    } else if (choice.child >= 0) {
      to = &kids_[static_cast<unsigned>(choice.child)];
    }
    if (!to) return;  // every lane full or every child starting: a step sends it later
    queued next = std::move(queue_.front());
    queue_.pop_front();
    send(*to, next, now);
  }
}

// The host's claim on flight `f` (not yet started: the child claims ~seq as it starts one).
// True when it landed: the child will answer it `cancelled` without running it. Only from
// the 0 the send wrote: any other word (~seq, or one a task scribbled over the lanes) means
// the call may have begun, and a call taken back after it began would run twice in one
// round, then once more when it is sent again after the scribbler's death.
bool process_ring::take_back(ring_child& c, flight& f) {
  std::uint64_t seen = 0;
  if (!std::atomic_ref<std::uint64_t>(c.child->region.lane(f.lane).claim)
           .compare_exchange_strong(seen, f.seq, std::memory_order_acq_rel) &&
      seen != f.seq) {
    return false;  // started, or scribbled on: the child holds it
  }
  f.taken_back = true;
  return true;
}

// Every call behind the running one that the host has given up since the last step: its
// record handed back, and taken back from its lane when the child has not started it.
void process_ring::withdraw_abandoned(ring_child& c) {
  for (std::size_t i = 1; i < c.flights.size(); ++i) {
    flight& f = c.flights[i];
    if (f.call && f.call->state.load(std::memory_order_relaxed) == call_state::abandoned) {
      finished_.push_back(f.call);
      f.call = nullptr;
      take_back(c, f);
    }
  }
}

// Moves calls waiting behind a slow one to an idle child (child_choice.hpp), newest
// first: taken back from the lanes, then to the head of the FIFO in their order.
void process_ring::move_waiting() {
  if (!queue_.empty() || kids_.empty()) return;
  // Each step comes here: no clock read and no views unless some child idles while another
  // holds a call behind its running one (the only case choose_move answers).
  bool idle = false;
  bool waiting = false;
  for (const ring_child& c : kids_) {
    idle = idle || (c.child && !c.dead && c.flights.empty());
    waiting = waiting || c.flights.size() > 1;
  }
  if (!idle || !waiting) return;
  const steady::time_point now = steady::now();
  const int from = choose_move(views(now));
  if (from < 0) return;
  ring_child& c = kids_[static_cast<unsigned>(from)];
  std::vector<queued> moved;
  for (std::size_t i = c.flights.size(); i-- > 1;) {
    flight& f = c.flights[i];
    if (!f.call || f.taken_back) continue;
    if (!take_back(c, f)) break;  // started (the child moved on): the ones before it too
    moved.push_back({f.call, f.job});
    f.call = nullptr;
    f.moved = true;
    counters().calls_moved.fetch_add(1, std::memory_order_relaxed);
  }
  for (queued& q : moved) queue_.push_front(std::move(q));  // newest pushed first
}

}  // namespace knit::detail

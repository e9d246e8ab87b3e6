// process_channel: the host side of the protocol in shared_region.hpp, with death
// detection, reaping, respawn and the crash-loop backoff (channel.hpp).
#include "process/channel.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "process/answer_check.hpp"
#include "process/counters.hpp"
#include "process/exit_status.hpp"
#include "process/pidfd.hpp"
#include "process/sandbox.hpp"
#include "process/slot_bell.hpp"
#include "process/standby.hpp"
#include "process/task_registry.hpp"

namespace knit::detail {
namespace {

enum class woke { answer, death, timeout };

using steady = std::chrono::steady_clock;

// Waits until `moved()` (a word of the child's moved), the child's death (its pidfd) or
// `until` (slot_bell.hpp); a moved word wins a tie: an answer written just before a death is
// still good. until = max(): no limit.
template <class Moved>
woke wait_for(const child_process& c, Moved moved, steady::time_point until,
              std::chrono::nanoseconds spin) {
  region_header& h = c.region.header();
  switch (wait_for_ring(moved, h.host_sleeping, c.answer.get(), c.pidfd.get(), until, spin)) {
    case bell_end::moved: return woke::answer;
    case bell_end::timeout: return woke::timeout;
    case bell_end::other_fd: break;
  }
  return woke::death;  // the pidfd readable, or poll failed: treat the child as gone
}


}  // namespace

process_channel::process_channel(std::shared_ptr<worker_box> box) { attach(std::move(box)); }

void process_channel::attach(std::shared_ptr<worker_box> box) {
  box_ = std::move(box);
  number_ = box_->number();
  options_ = &box_->options();
  spin_ = may_spin() ? std::chrono::nanoseconds(options_->spin) : std::chrono::nanoseconds(0);
  degraded_ = false;
}

process_channel::~process_channel() {
  if (child_) end_child(/*kill=*/true);
  if (box_) box_->abandon();  // a replacement under way is ended too
}

std::string process_channel::who(std::string_view name) const {
  std::string s = "knit: process task '" + std::string(name) + "'";
  if (child_) {
    s += " (pid " + std::to_string(child_->pid) + ", knit-worker-" + std::to_string(number_) + ")";
  }
  return s;
}

std::string process_channel::end_child(bool kill) {
  std::string how = detail::end_child(*child_, kill);
  child_.reset();  // closes the fds, unmaps the region
  return how;
}

process_error process_channel::crashed(std::uint64_t id, child_end& end, std::string message) {
  count_crash_once(end);
  degraded_ = box_->replace(id, /*crash=*/true);
  if (degraded_) message += "; crash loop: respawns back off";
  return process_error(errc::worker_crashed, message);
}

void process_channel::ensure_child(std::string_view name) {
  if (child_) return;
  // Started by the starter: at once for a new worker, after the crash loop's backoff for a
  // degraded one (this worker thread waits, like a slow task; its calls' deadlines still
  // hold on the host, which gives up on them at their time).
  try {
    child_ = box_->take();
  } catch (const process_error& e) {
    std::string what = message_of(e);
    if (what.starts_with("knit: ")) what.erase(0, 6);
    throw process_error(static_cast<errc>(e.code().value()),
                        "knit: process task '" + std::string(name) + "': " + what);
  }
  next_lane_ = 0;  // a new child starts at lane 0, its answer_seqs at 0
  lane_answered_.fill(0);
}

void process_channel::reap_if_died_between_calls() {
  if (!child_) return;
  pollfd fd{child_->pidfd.get(), POLLIN, 0};
  if (::poll(&fd, 1, 0) == 1) {
    // It died while idle (killed from outside, OOM): no call was running, none fails. The
    // starter has most likely seen it already, reaped it, counted the crash and started
    // its replacement; what is left here is its fds and mapping.
    const std::uint64_t id = child_->id;
    const std::shared_ptr<child_end> end = child_->end;
    end_child(false);
    count_crash_once(*end);
    degraded_ = box_->replace(id, /*crash=*/true);
  }
}

std::string process_channel::call(std::uint32_t index, std::string_view name,
                                  std::string_view bytes, const process_call_limits& limits) {
  if (!box_) attach(claim_worker());
  if (bytes.size() > options_->arena_bytes) {
    throw process_error(errc::payload_too_large,
                        "knit: process task '" + std::string(name) + "': request of " +
                            std::to_string(bytes.size()) + " bytes is over the arena of " +
                            std::to_string(options_->arena_bytes) +
                            " bytes (process_options::arena_bytes); not sent");
  }
  // Claimed by this worker just as its deadline passed (the host fails it at that time):
  // sending it would only start work nobody waits for.
  if (steady::now() >= limits.deadline) throw past_deadline(name, "before it was sent");
  reap_if_died_between_calls();
  ensure_child(name);
  // A crash loop's backoff (or a slow start) may have outlasted the deadline.
  if (steady::now() >= limits.deadline) throw past_deadline(name, "before it was sent");
  child_process& c = *child_;
  region_header& h = c.region.header();
  const unsigned k = next_lane_;
  lane_words& lane = c.region.lane(k);
  // From here until its answer is read, a death of this child is this call's to report
  // (child_end.hpp): the starter reaps it but leaves the counting to this call.
  // Release is enough: a death the starter must not count (a sandbox kill) comes after the
  // child read request_seq (release below, acquire there), which orders this store before
  // it; for any other death both sides may count, and count_crash_once counts once.
  c.end->in_call.store(true, std::memory_order_release);
  std::memcpy(c.region.request_arena(k), bytes.data(), bytes.size());
  store(lane.task_index, index);
  store(lane.request_bytes, static_cast<std::uint64_t>(bytes.size()));
  const std::uint64_t seq = ++seq_;
  store(lane.request_seq, seq, std::memory_order_release);
  next_lane_ = (k + 1) % c.region.lanes();
  counters().calls.fetch_add(1, std::memory_order_relaxed);
  ring_if_sleeping(h.child_sleeping, c.request.get());
  // The stuck limit counts from here, the moment the child has the request.
  const bool stuck_limited = limits.stuck_after > steady::duration::zero();
  const steady::time_point stuck_at =
      stuck_limited ? steady::now() + limits.stuck_after : steady::time_point::max();
  // Any new value of answer_seq ends the wait; one that is not `seq` is a broken protocol
  // (checked below), never a reason to wait on.
  const woke w = wait_for(
      c, [&] { return load(lane.answer_seq, std::memory_order_acquire) != lane_answered_[k]; },
      std::min(limits.deadline, stuck_at), spin_);
  const std::uint64_t id = c.id;
  if (w == woke::death) {
    const std::shared_ptr<child_end> end = c.end;  // outlives child_ (reset by end_child)
    std::string who_it_was = who(name);
    // Written by the child's SIGSYS handler just before it exited (sandbox.hpp): its
    // sandbox refused a call. Read before end_child unmaps the region.
    const std::uint64_t refused = load(h.sandbox_syscall, std::memory_order_acquire);
    std::string how = end_child(true);
    if (refused != 0) {
      counters().sandbox_kills.fetch_add(1, std::memory_order_relaxed);
      degraded_ = box_->replace(id, /*crash=*/true);  // a violation loop backs off too
      std::string message = who_it_was + ": the sandbox refused " + syscall_name(refused - 1) +
                            "; the worker " + how + " and is replaced";
      if (degraded_) message += "; crash loop: respawns back off";
      throw process_error(errc::sandbox_violation, message);
    }
    throw crashed(id, *end, who_it_was + ": the worker " + how + " during the call");
  }
  if (w == woke::timeout) throw killed_past_limit(name, stuck_at < limits.deadline);
  // Every word read once, then checked: the child may have scribbled on any of them.
  const std::size_t arena = c.region.arena_bytes();
  const answer_verdict verdict = check_answer(read_answer_words(lane), seq, arena);
  if (verdict.kind == answer_kind::broken) {
    const std::shared_ptr<child_end> end = c.end;
    std::string who_it_was = who(name);
    std::string message = broken_message(who_it_was, verdict);
    message += end_child(true);
    throw crashed(id, *end, std::move(message));
  }
  lane_answered_[k] = seq;
  // Idle again: a death from here on is reported by no call, so the starter counts it.
  c.end->in_call.store(false, std::memory_order_release);
  if (verdict.kind == answer_kind::out_of_memory) {
    // The child lives, but its heap just failed: not trusted with the next call.
    counters().memory_limit_kills.fetch_add(1, std::memory_order_relaxed);
    std::string message = who(name) + ": went over the worker's memory limit of " +
                          std::to_string(options_->memory_limit) +
                          " bytes (process_options::memory_limit: an allocation failed); the "
                          "worker is replaced: ";
    message += end_child(true);
    box_->replace(id, /*crash=*/false);
    throw process_error(errc::memory_limit, message);
  }
  if (degraded_) degraded_ = box_->still_degraded();
  return take_answer(verdict, name, c.region.answer_arena(k), arena, [&] { return who(name); });
}

process_error process_channel::past_deadline(std::string_view name, std::string_view when) {
  return process_error(errc::timed_out, "knit: process task '" + std::string(name) +
                                            "' ran past its deadline " + std::string(when));
}

process_error process_channel::killed_past_limit(std::string_view name, bool stuck) {
  // Not a crash: the task did nothing wrong the kernel saw, and a slow task must not put
  // its worker into a crash loop. The next call starts a replacement, counted as a respawn.
  std::string message =
      who(name) + (stuck ? ": stuck (ran past its stuck limit)" : ": ran past its deadline");
  // Counted before the reap: whoever sees the child gone (a test, the next call on another
  // worker thread) sees it counted.
  counters().killed.fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t id = child_->id;
  message += "; the worker was killed: " + end_child(true);
  if (stuck && box_->batch() != 0) {
    // A stuck call is one the pool may have retired this thread for, and the thread it
    // starts instead has no worker: given back with its replacement started at once, so the
    // next thread to claim one (that thread, or this one if it was not retired) takes that
    // child instead of spawning its own (standby.hpp).
    return_worker(std::move(box_), id);
    box_.reset();
  } else {
    box_->replace(id, /*crash=*/false);  // started at once: a kill is no crash
  }
  return process_error(stuck ? errc::stuck : errc::timed_out, message);
}

}  // namespace knit::detail

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
#include "process/slot_bell.hpp"
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

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

process_channel::process_channel(unsigned number, process_options options)
    : number_(number),
      options_(std::move(options)),
      spin_(may_spin() ? std::chrono::nanoseconds(options_.spin) : std::chrono::nanoseconds(0)),
      crash_loop_(options_.crash_loop_crashes, options_.crash_loop_window, options_.backoff_initial,
                  options_.backoff_max) {}

process_channel::~process_channel() {
  if (child_) end_child(/*kill=*/true);
  if (degraded_) counters().degraded_workers.fetch_sub(1, std::memory_order_relaxed);
}

std::string process_channel::who(std::string_view name) const {
  std::string s = "knit: process task '" + std::string(name) + "'";
  if (child_) {
    s += " (pid " + std::to_string(child_->pid) + ", knit-worker-" + std::to_string(number_) + ")";
  }
  return s;
}

std::string process_channel::end_child(bool kill) {
  child_process& c = *child_;
  if (kill) signal_pidfd(c.pidfd.get(), SIGKILL);
  siginfo_t info{};
  int r;
  do {
    r = ::waitid(p_pidfd, static_cast<id_t>(c.pidfd.get()), &info, WEXITED);
  } while (r < 0 && errno == EINTR);
  std::string how = r == 0 ? describe_exit(info)
                           : std::string("ended (its status was not available: ") +
                                 std::strerror(errno) + "; reaped elsewhere?)";
  child_.reset();  // closes the fds, unmaps the region
  if (started_) counters().children_live.fetch_sub(1, std::memory_order_relaxed);
  started_ = false;
  return how;
}

void process_channel::note_crash() {
  const auto now = crash_loop::clock::now();
  crash_loop_.record_crash(now);
  counters().crashes.fetch_add(1, std::memory_order_relaxed);
  counters().to_replace.fetch_add(1, std::memory_order_relaxed);
  const bool degraded = crash_loop_.degraded(now);
  if (degraded != degraded_) {
    if (degraded) {
      counters().degraded_workers.fetch_add(1, std::memory_order_relaxed);
    } else {
      counters().degraded_workers.fetch_sub(1, std::memory_order_relaxed);
    }
    degraded_ = degraded;
  }
}

process_error process_channel::crashed(std::string message) {
  note_crash();
  if (degraded_) message += "; crash loop: respawns back off";
  return process_error(errc::worker_crashed, message);
}

void process_channel::start_child(std::string_view name) {
  task_registry& registry = task_registry::instance();
  registry.freeze();
  try {
    child_ = spawn_child(options_.worker_executable, number_, options_.arena_bytes,
                         static_cast<std::uint64_t>(options_.spin.count()));
  } catch (const process_error&) {
    note_crash();
    throw;
  }
  const auto ms = static_cast<int>(options_.start_timeout.count());
  region_header& header = child_->region.header();
  const woke w = wait_for(
      *child_, [&] { return load(header.ready, std::memory_order_acquire) != 0; },
      steady::now() + options_.start_timeout, std::chrono::nanoseconds(0));
  std::string failure;
  if (w == woke::death) {
    failure = who(name);  // before end_child, which forgets the pid
    // SIGKILL to a dead child is harmless, and keeps the reap bounded should poll have
    // reported an error rather than the death.
    failure += ": the worker " + end_child(true) + " before its handshake";
  } else if (w == woke::timeout) {
    failure = who(name) + ": the worker did not finish its handshake within " + std::to_string(ms) +
              " ms; killed";
    end_child(true);
  } else {
    region_header& h = child_->region.header();
    const std::uint32_t ready = load(h.ready, std::memory_order_acquire);
    const std::uint32_t count = load(h.registry_count);
    const std::uint64_t hash = load(h.registry_hash);
    if (ready != 1 || count != registry.count() || hash != registry.hash()) {
      failure = who(name) + ": task registry mismatch: the host has " +
                std::to_string(registry.count()) + " tasks (hash " + hex(registry.hash()) +
                "), the worker " + options_.worker_executable + " has " + std::to_string(count) +
                " (hash " + hex(hash) + "); both must register the same tasks in the same order";
      end_child(true);
    }
  }
  if (!failure.empty()) {
    note_crash();
    throw process_error(errc::worker_start_failed, failure);
  }
  started_ = true;
  answered_seq_ = 0;  // a new child's answer_seq starts at 0
  std::uint64_t lost = counters().to_replace.load(std::memory_order_relaxed);
  while (lost > 0 &&
         !counters().to_replace.compare_exchange_weak(lost, lost - 1, std::memory_order_relaxed)) {
  }
  if (lost > 0) counters().respawned.fetch_add(1, std::memory_order_relaxed);
  counters().children_started.fetch_add(1, std::memory_order_relaxed);
  counters().children_live.fetch_add(1, std::memory_order_relaxed);
}

void process_channel::ensure_child(std::string_view name) {
  if (child_) return;
  const auto now = crash_loop::clock::now();
  const auto at = crash_loop_.respawn_at(now);
  // Degraded: this worker thread waits, like a slow task; its calls' deadlines still hold
  // on the host, which gives up on them at their time.
  if (at > now) std::this_thread::sleep_until(at);
  start_child(name);
}

void process_channel::reap_if_died_between_calls() {
  if (!child_) return;
  pollfd fd{child_->pidfd.get(), POLLIN, 0};
  if (::poll(&fd, 1, 0) == 1) {
    // It died while idle (killed from outside, OOM): no call was running, none fails.
    end_child(false);
    note_crash();
  }
}

std::string process_channel::call(std::uint32_t index, std::string_view name,
                                  std::string_view bytes, const process_call_limits& limits) {
  if (bytes.size() > options_.arena_bytes) {
    throw process_error(errc::payload_too_large,
                        "knit: process task '" + std::string(name) + "': request of " +
                            std::to_string(bytes.size()) + " bytes is over the arena of " +
                            std::to_string(options_.arena_bytes) +
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
  std::memcpy(c.region.request_arena(), bytes.data(), bytes.size());
  store(h.task_index, index);
  store(h.request_bytes, static_cast<std::uint64_t>(bytes.size()));
  const std::uint64_t seq = ++seq_;
  store(h.request_seq, seq, std::memory_order_release);
  counters().calls.fetch_add(1, std::memory_order_relaxed);
  ring_if_sleeping(h.child_sleeping, c.request.get());
  // The stuck limit counts from here, the moment the child has the request.
  const bool stuck_limited = limits.stuck_after > steady::duration::zero();
  const steady::time_point stuck_at =
      stuck_limited ? steady::now() + limits.stuck_after : steady::time_point::max();
  // Any new value of answer_seq ends the wait; one that is not `seq` is a broken protocol
  // (checked below), never a reason to wait on.
  const woke w = wait_for(
      c, [&] { return load(h.answer_seq, std::memory_order_acquire) != answered_seq_; },
      std::min(limits.deadline, stuck_at), spin_);
  if (w == woke::death) {
    std::string who_it_was = who(name);
    throw crashed(who_it_was + ": the worker " + end_child(true) + " during the call");
  }
  if (w == woke::timeout) throw killed_past_limit(name, stuck_at < limits.deadline);
  // Every word read once, then checked: the child may have scribbled on any of them.
  const std::size_t arena = c.region.arena_bytes();
  const answer_verdict verdict = check_answer(read_answer_words(h), seq, arena);
  if (verdict.kind == answer_kind::broken) {
    std::string who_it_was = who(name);
    throw crashed(broken_message(who_it_was, verdict) + end_child(true));
  }
  answered_seq_ = seq;
  if (degraded_) note_recovery();
  return take_answer(verdict, name, c.region.answer_arena(), arena, [&] { return who(name); });
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
  counters().to_replace.fetch_add(1, std::memory_order_relaxed);
  message += "; the worker was killed: " + end_child(true);
  return process_error(stuck ? errc::stuck : errc::timed_out, message);
}

void process_channel::note_recovery() {
  const bool degraded = crash_loop_.degraded(crash_loop::clock::now());
  if (!degraded) {
    counters().degraded_workers.fetch_sub(1, std::memory_order_relaxed);
    degraded_ = false;
  }
}

}  // namespace knit::detail

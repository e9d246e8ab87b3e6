// process_ring: how a child's calls end other than by an answer (process_ring.hpp): its
// death, a kill at a call's deadline or stuck limit, a broken protocol (a bad answer, or
// more wakes than answers), the memory limit, and the host's give-up at shutdown. In each,
// only the call the child was running fails; the calls behind it were never started and go
// back to the FIFO, each at most once.
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "call_state.hpp"
#include "invariant.hpp"
#include "pool_shared.hpp"
#include "process/counters.hpp"
#include "process/process_ring.hpp"
#include "process/sandbox.hpp"

namespace knit::detail {

void at_ring_point(ring_point where, region_header& h, lane_words& lane);  // process_ring.cpp

// Ends the child (killed first when `kill`) and reaps it; its mapping stays, final from
// here: what it holds was written before the end. Returns how it ended.
std::string process_ring::stop_child(ring_child& c, bool kill) {
  unwatch(c);
  return end_child(*c.child, kill);
}

// stop_child, then its fds and mapping released: at once, not at the next call.
std::string process_ring::end_idle_child(ring_child& c, bool kill) {
  std::string how = stop_child(c, kill);
  c.child.reset();
  c.dead = false;
  return how;
}

// Whether the starter has reaped this child (it saw the pidfd first).
bool process_ring::reaped_already(ring_child& c) {
  std::lock_guard lock(c.child->end->mutex);
  return c.child->end->reaped;
}

// `c`'s child is stopped (its mapping final): the oldest call in it fails with `oldest`
// (dropped if it was handed back), or, when `oldest_unstarted`, goes again too; the ones
// behind it
// were never started and go back to the head of the FIFO in their order, unless sent once
// again already: then they fail too. Then the child is released.
void process_ring::end_flights(ring_child& c, std::exception_ptr oldest, bool oldest_unstarted) {
  bool first = true;
  std::vector<queued> again;
  for (flight& f : c.flights) {
    KNIT_ASSERT(in_children_ > 0);
    --in_children_;
    if (!f.call) {
      first = false;
      continue;
    }
    if (first && oldest_unstarted) {
      // Running (its state) but never started: to an idle child, where it runs first.
      f.job->resent = true;
      counters().calls_resent.fetch_add(1, std::memory_order_relaxed);
      again.push_back({f.call, std::move(f.job), /*running=*/true});
    } else if (first) {
      complete(f.call, *f.job, oldest, {});
    } else if (f.job->resent) {
      fail_unsent(f.call, *f.job,
                  std::make_exception_ptr(process_error(
                      errc::worker_crashed,
                      "knit: process task '" + f.job->task +
                          "': a second worker process ended before it started this call "
                          "(sent again once already)")));
    } else {
      f.job->resent = true;
      counters().calls_resent.fetch_add(1, std::memory_order_relaxed);
      again.push_back({f.call, std::move(f.job), false});
    }
    first = false;
  }
  queue_.insert(queue_.begin(), std::make_move_iterator(again.begin()),
                std::make_move_iterator(again.end()));
  c.flights.clear();
  c.stuck_at = steady::time_point::max();
  c.child.reset();  // closes its fds, unmaps its region
  c.dead = false;
}

// The child broke the protocol (`why`): killed, its oldest call fails, the rest go again.
void process_ring::end_broken(ring_child& c, const std::string& why) {
  const std::uint64_t id = c.child->id;
  const std::shared_ptr<child_end> end = c.child->end;
  const std::string task = c.flights.empty() ? std::string("(none)") : c.flights.front().job->task;
  std::string message = who(c, task) + " broke the protocol (" + why + "); the worker was killed: ";
  message += stop_child(c, true);
  count_crash_once(*end);
  counters().protocol_kills.fetch_add(1, std::memory_order_relaxed);
  if (c.box->replace(id, /*crash=*/true)) message += "; crash loop: respawns back off";
  if (c.flights.empty()) {
    c.child.reset();
    c.dead = false;
    return;
  }
  end_flights(c, std::make_exception_ptr(process_error(errc::worker_crashed, message)));
}

// Whether the child had claimed flight `f` (lane_words::claim): read from a stopped child's
// final mapping, it says whether the call ever began.
bool process_ring::started(ring_child& c, const flight& f) {
  return load(c.child->region.lane(f.lane).claim, std::memory_order_acquire) == ~f.seq;
}

// Its death's edge came before the answers were read: every answer it wrote is taken, and
// the oldest call left is the one it died running, if it had claimed it (claim == ~seq);
// a child that died before it claimed its oldest call (killed between two calls before the
// host saw it) never started it, and it goes to another child like the calls behind it.
void process_ring::end_dead(ring_child& c) {
  flight& oldest = c.flights.front();
  if (oldest.call && !oldest.job->resent && !started(c, oldest)) {
    const std::uint64_t id = c.child->id;
    const std::shared_ptr<child_end> end = c.child->end;
    stop_child(c, true);
    count_crash_once(*end);
    c.box->replace(id, /*crash=*/true);
    end_flights(c, nullptr, /*oldest_unstarted=*/true);
    return;
  }
  const std::uint64_t id = c.child->id;
  const std::shared_ptr<child_end> end = c.child->end;
  std::string who_it_was = who(c, c.flights.front().job->task);
  // The kernel decides (judge_death): the child's word only names a refused call, and
  // only when waitid says the sandbox ended it.
  const std::uint64_t word =
      load(c.child->region.header().sandbox_syscall, std::memory_order_acquire);
  std::string how = stop_child(c, true);
  const death_verdict verdict = judge_death(how_it_ended(*end), word);
  if (verdict.sandbox_violation) {
    counters().sandbox_kills.fetch_add(1, std::memory_order_relaxed);
    std::string message = who_it_was + ": the sandbox refused " + verdict.what + "; the worker " +
                          how + " and is replaced";
    if (c.box->replace(id, /*crash=*/true)) message += "; crash loop: respawns back off";
    end_flights(c, std::make_exception_ptr(process_error(errc::sandbox_violation, message)));
    return;
  }
  count_crash_once(*end);
  std::string message = who_it_was + ": the worker " + how + " during the call";
  if (c.box->replace(id, /*crash=*/true)) message += "; crash loop: respawns back off";
  end_flights(c, std::make_exception_ptr(process_error(errc::worker_crashed, message)));
}

// The oldest call ran past its deadline or its stuck limit: its child is killed.
void process_ring::end_past_limit(ring_child& c, steady::time_point now, answer_verdict& verdict) {
  flight& oldest = c.flights.front();
  const std::uint64_t id = c.child->id;
  const std::string task = oldest.job->task;
  const bool stuck = now >= c.stuck_at && c.stuck_at < oldest.job->limits.deadline;
  at_ring_point(ring_point::host_killing_child, c.child->region.header(),
                c.child->region.lane(oldest.lane));
  // A kill, not a crash: counted before the reap (whoever sees it gone sees it counted).
  counters().killed.fetch_add(1, std::memory_order_relaxed);
  if (stuck) host_counters_.ring_calls_stuck.bump();
  const std::uint64_t killed_seq = oldest.seq;
  std::string message =
      who(c, task) + (stuck ? ": stuck (ran past its stuck limit)" : ": ran past its deadline");
  message += "; the worker was killed: " + stop_child(c, true);
  c.box->replace(id, /*crash=*/false);  // started at once: a kill is no crash
  // Dead now, its mapping final: an answer it wrote since the read above is taken, so
  // that call is not failed for nothing, and the call behind it may then have started.
  take_answers(c, now, verdict);
  const errc code = stuck ? errc::stuck : errc::timed_out;
  if (!c.flights.empty() && c.flights.front().seq == killed_seq) {
    end_flights(c, std::make_exception_ptr(process_error(code, message)));
  } else if (!c.flights.empty() && !started(c, c.flights.front())) {
    end_flights(c, nullptr, /*oldest_unstarted=*/true);  // the child died before it began
  } else if (!c.flights.empty()) {
    end_flights(c, std::make_exception_ptr(process_error(
                       errc::worker_crashed,
                       who(c, c.flights.front().job->task) +
                           ": the worker was killed while it ran this call (the call before it "
                           "ran past its limit: " +
                           message + ")")));
  } else {
    c.child.reset();
    c.dead = false;
  }
}

void process_ring::check_child(ring_child& c, steady::time_point now, bool clock_read) {
  if (!c.child) return;
  child_process& child = *c.child;
  const std::uint64_t id = child.id;
  if (c.flights.empty()) {
    if (!c.dead && !reaped_already(c)) {
      // An idle child that woke its host more often than it answered: a broken protocol.
      if (c.rings > c.answers + spare_rings) {
        end_broken(c, "rang its answer bell " + std::to_string(c.rings) + " times for " +
                          std::to_string(c.answers) + " answers");
      }
      return;
    }
    // An idle child's death (killed from outside): no call fails; its fds and mapping are
    // released now, and the starter (which most likely reaped it) replaces it.
    const std::shared_ptr<child_end> end = child.end;
    end_idle_child(c, false);
    count_crash_once(*end);
    c.box->replace(id, /*crash=*/true);
    return;
  }
  answer_verdict verdict{answer_kind::ok, 0, {}};
  const taken at = take_answers(c, now, verdict);
  if (c.flights.empty()) {
    if (c.rings > c.answers + spare_rings) {
      end_broken(c, "rang its answer bell " + std::to_string(c.rings) + " times for " +
                        std::to_string(c.answers) + " answers");
    }
    return;  // every call answered
  }
  if (at == taken::all && c.flights.size() > 1) withdraw_abandoned(c);
  if (at == taken::broken) {
    end_broken(c, verdict.why);
    return;
  }
  if (at == taken::out_of_memory) {
    counters().memory_limit_kills.fetch_add(1, std::memory_order_relaxed);
    std::string message = who(c, c.flights.front().job->task) +
                          ": went over the worker's memory limit of " +
                          std::to_string(options_.memory_limit) +
                          " bytes (process_options::memory_limit: an allocation failed); "
                          "the worker is replaced: ";
    message += stop_child(c, true);
    c.box->replace(id, /*crash=*/false);
    end_flights(c, std::make_exception_ptr(process_error(errc::memory_limit, message)));
    return;
  }
  if (c.dead) {
    end_dead(c);
    return;
  }
  if (c.rings > c.answers + spare_rings) {
    end_broken(c, "rang its answer bell " + std::to_string(c.rings) + " times for " +
                      std::to_string(c.answers) + " answers");
    return;
  }
  flight& oldest = c.flights.front();
  at_ring_point(ring_point::host_read_answers, child.region.header(),
                child.region.lane(oldest.lane));  // no answer yet: the host may sleep
  if (!clock_read) return;
  if (now >= c.begin_by && end_if_hung(c, now)) return;
  const bool past_deadline = now >= oldest.job->limits.deadline;
  const bool stuck = now >= c.stuck_at && c.stuck_at < oldest.job->limits.deadline;
  if (past_deadline || stuck) end_past_limit(c, now, verdict);
}

// The oldest call has been the oldest for begin_timeout: if the child has not begun it, the
// child is hung (a task before may have left it broken: blocked in its own bell, its fds'
// flags changed) and is killed as a broken protocol; the call, never begun, goes to another
// child, once. True when it ended the child.
bool process_ring::end_if_hung(ring_child& c, steady::time_point now) {
  c.begin_by = steady::time_point::max();  // looked at once per oldest call
  flight& oldest = c.flights.front();
  if (started(c, oldest) || !oldest.call) return false;
  (void)now;
  const std::uint64_t id = c.child->id;
  const std::shared_ptr<child_end> end = c.child->end;
  stop_child(c, true);
  count_crash_once(*end);
  counters().protocol_kills.fetch_add(1, std::memory_order_relaxed);
  c.box->replace(id, /*crash=*/true);
  if (oldest.job->resent) {
    end_flights(
        c, std::make_exception_ptr(process_error(
               errc::worker_crashed, who(c, oldest.job->task) +
                                         ": a second worker process did not begin this call within "
                                         "process_options::begin_timeout (hung); it was killed")));
  } else {
    end_flights(c, nullptr, /*oldest_unstarted=*/true);
  }
  return true;
}

std::size_t process_ring::give_up() {
  std::size_t n = 0;
  for (ring_child& c : kids_) {
    if (c.flights.empty()) continue;
    const std::uint64_t id = c.child->id;
    const bool running = c.flights.front().call != nullptr;
    std::string message = who(c, c.flights.front().job->task) +
                          ": given up at the pool's shutdown deadline; the worker was killed: ";
    message += stop_child(c, true);
    c.box->replace(id, /*crash=*/false);
    auto error = std::make_exception_ptr(process_error(errc::cancelled, message));
    // Every call in it fails: the pool is going away, nothing is sent again.
    for (flight& f : c.flights) {
      if (f.call && f.call != c.flights.front().call) {
        fail_unsent(f.call, *f.job, error);
        f.call = nullptr;
      }
    }
    end_flights(c, error);
    if (running) ++n;
  }
  return n;
}

}  // namespace knit::detail

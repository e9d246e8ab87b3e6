// process_host_ring: the host side of the host <-> child ring (protocol in host_ring.hpp),
// and submit_process's offer of its job to the host that enqueues the call.
#include "process/host_ring.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "call_state.hpp"
#include "invariant.hpp"
#include "pool_shared.hpp"
#include "process/answer_check.hpp"
#include "process/counters.hpp"
#include "process/sandbox.hpp"
#include "process/slot_bell.hpp"
#include "process/standby.hpp"
#include "process/task_registry.hpp"

namespace knit::detail {
namespace {

using steady = std::chrono::steady_clock;

// Writers: each ring's constructor (+1) and destructor (-1); partner: submit_process's
// relaxed load (host_rings_live), which only picks the path: a job no ring takes runs on a
// worker thread, so a stale answer either way is correct.
std::atomic<unsigned> rings_live{0};
// The job submit_process offers to the next enqueue on this thread (one thread: no partner).
thread_local std::shared_ptr<process_job> offered_job;
// Writer: a test (set_ring_hook); partner: the ring's relaxed load at each point.
std::atomic<ring_hook> hook{nullptr};

void at_ring_point(ring_point where, region_header& h, lane_words& lane) {
  if (ring_hook f = hook.load(std::memory_order_relaxed)) f(where, h, lane);
}

constexpr std::uint64_t kStartsEvent = ~std::uint64_t{0};
constexpr std::uint64_t kBellEvent = ~std::uint64_t{0} - 1;

// KNIT_PROCESS_HOST_RING, when set, decides over process_options::host_ring. Read at each
// attach (a host's attach cannot fail: a value it does not know is reported, once per
// process, and ignored).
bool ring_wanted(const process_options& options) {
  const char* env = std::getenv("KNIT_PROCESS_HOST_RING");
  if (!env || *env == '\0') return options.host_ring;
  const std::string_view value(env);
  if (value == "1") return true;
  if (value == "0") return false;
  static std::once_flag reported;
  std::call_once(reported, [&] {
    std::fprintf(stderr,
                 "knit: KNIT_PROCESS_HOST_RING='%.*s' is neither 0 nor 1: ignored "
                 "(process_options::host_ring decides)\n",
                 static_cast<int>(std::min<std::size_t>(value.size(), 64)), value.data());
  });
  return options.host_ring;
}

}  // namespace

bool host_rings_live() noexcept { return rings_live.load(std::memory_order_relaxed) != 0; }

void offer_process_job(std::shared_ptr<process_job> job) noexcept { offered_job = std::move(job); }

std::shared_ptr<process_job> take_offered_process_job() noexcept { return std::move(offered_job); }

std::string run_process_job(process_job& job) {
  if (!job.answered) return run_process_task(job.task, job.bytes, job.limits);
  if (job.error) std::rethrow_exception(job.error);
  return std::move(job.answer);
}

void set_ring_hook(ring_hook f) noexcept { hook.store(f, std::memory_order_relaxed); }

std::unique_ptr<process_host_ring> process_host_ring::make_if_enabled(
    int bell_fd, unsigned children, single_writer_counter& calls_stuck) {
  process_options options = current_process_options();
  // A program with no process task registered makes no process call: its hosts keep the
  // doorbell itself as their completion_fd.
  if (task_registry::instance().count() == 0 || !ring_wanted(options)) return nullptr;
  return std::make_unique<process_host_ring>(bell_fd, children, std::move(options), calls_stuck);
}

process_host_ring::process_host_ring(int bell_fd, unsigned children, process_options options,
                                     single_writer_counter& calls_stuck)
    : options_(std::move(options)),
      children_(children),
      epoll_(::epoll_create1(EPOLL_CLOEXEC)),
      starts_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      seats_(),
      calls_stuck_(calls_stuck) {
  if (!epoll_ || !starts_) {
    throw std::system_error(errno, std::generic_category(), "knit: host ring");
  }
  epoll_event bell{};
  bell.events = EPOLLIN;  // level: the host's drain resets it
  bell.data.u64 = kBellEvent;
  epoll_event starts{};
  starts.events = EPOLLIN;  // level: step() resets it
  starts.data.u64 = kStartsEvent;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, bell_fd, &bell) != 0 ||
      ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, starts_.get(), &starts) != 0) {
    throw std::system_error(errno, std::generic_category(), "knit: host ring epoll_ctl");
  }
  events_.resize(2 * static_cast<std::size_t>(children) + 2);
  rings_live.fetch_add(1, std::memory_order_relaxed);
}

process_host_ring::~process_host_ring() {
  rings_live.fetch_sub(1, std::memory_order_relaxed);
  for (seat& s : seats_) {
    KNIT_ASSERT(s.flights.empty());  // the host settled every call before it went away
    if (s.child) end_seat_child(s, /*kill=*/true);
    if (s.box) s.box->abandon();  // clears the listener before starts_ closes
  }
}

std::string process_host_ring::who(const seat& s, std::string_view task) const {
  std::string w = "knit: process task '" + std::string(task) + "'";
  if (s.child) {
    w += " (pid " + std::to_string(s.child->pid) + ", knit-worker-" +
         std::to_string(s.box->number()) + ")";
  }
  return w;
}

// At the host's first process call: a ring whose host never makes one costs no box, seat
// or system call (step() returns at once).
void process_host_ring::claim_boxes() {
  seats_.resize(children_);
  for (seat& s : seats_) {
    s.box = claim_worker();
    s.box->set_listener(starts_.get());
  }
}

void process_host_ring::watch(unsigned i) {
  seat& s = seats_[i];
  epoll_event answer{};
  answer.events = EPOLLIN | EPOLLET;  // edge: the counter is never read (host_ring.hpp)
  answer.data.u64 = std::uint64_t{i} * 2;
  epoll_event death{};
  death.events = EPOLLIN | EPOLLET;
  death.data.u64 = std::uint64_t{i} * 2 + 1;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, s.child->answer.get(), &answer);
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, s.child->pidfd.get(), &death) != 0) {
    s.dead = true;  // cannot watch it: treat it as gone (ended and replaced next step)
  }
}

void process_host_ring::unwatch(seat& s) noexcept {
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, s.child->answer.get(), nullptr);
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, s.child->pidfd.get(), nullptr);
}

// Ends the seat's child (killed first when `kill`) and reaps it; its mapping stays, final
// from here: what it holds was written before the end. Returns how it ended.
std::string process_host_ring::stop_child(seat& s, bool kill) {
  unwatch(s);
  return end_child(*s.child, kill);
}

// stop_child, then its fds and mapping released: at once, not at the seat's next call.
std::string process_host_ring::end_seat_child(seat& s, bool kill) {
  std::string how = stop_child(s, kill);
  s.child.reset();
  s.dead = false;
  return how;
}

// Whether the starter has reaped this seat's child (it saw the pidfd first).
bool process_host_ring::reaped_already(seat& s) {
  std::lock_guard lock(s.child->end->mutex);
  return s.child->end->reaped;
}

void process_host_ring::accept(call_base* c, std::shared_ptr<process_job> job) {
  if (seats_.empty()) claim_boxes();
  queue_.push_back({c, std::move(job)});
  send_queued();
  // Finished without a child (over the arena, a failed start): no child will ring, so the
  // ring rings itself for the drain that hands it back.
  if (!finished_.empty()) {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(starts_.get(), &one, sizeof one);
  }
}

// A running call's outcome into its record (run() on this thread, through run_process_job),
// then the record to the host's drain.
void process_host_ring::complete(call_base* c, process_job& job, std::exception_ptr error,
                                 std::string answer) {
  job.answered = true;
  job.error = std::move(error);
  job.answer = std::move(answer);
  c->run();
  try_move(*c, call_state::running, call_state::done);
  finished_.push_back(c);
}

// A call that fails before it reaches a child: run with `error` if it is still queued,
// else (abandoned: cancelled, past its deadline) handed back as it is.
void process_host_ring::fail_unsent(call_base* c, process_job& job, std::exception_ptr error) {
  if (try_move(*c, call_state::queued, call_state::running)) {
    complete(c, job, std::move(error), {});
  } else {
    finished_.push_back(c);
  }
}

// Sends `c` (state queued) into seat `s`'s next lane, which is free. False when `c` was
// finished without a send (abandoned, over the arena, past its deadline).
bool process_host_ring::send(seat& s, call_base* c, std::shared_ptr<process_job>& job) {
  child_process& child = *s.child;
  KNIT_ASSERT(s.flights.size() < child.region.lanes());
  if (c->state.load(std::memory_order_relaxed) == call_state::abandoned) {
    finished_.push_back(c);  // cancelled, or past its deadline, while queued: never run
    return false;
  }
  const auto now = steady::now();
  if (job->bytes.size() > options_.arena_bytes) {
    fail_unsent(c, *job,
                std::make_exception_ptr(process_error(
                    errc::payload_too_large,
                    "knit: process task '" + job->task + "': request of " +
                        std::to_string(job->bytes.size()) + " bytes is over the arena of " +
                        std::to_string(options_.arena_bytes) +
                        " bytes (process_options::arena_bytes); not sent")));
    return false;
  }
  if (now >= job->limits.deadline) {
    fail_unsent(c, *job,
                std::make_exception_ptr(process_error(
                    errc::timed_out, "knit: process task '" + job->task +
                                         "' ran past its deadline before it was sent")));
    return false;
  }
  // The oldest call in a child is running; the ones behind it stay queued (host_ring.hpp).
  const bool oldest = s.flights.empty();
  if (oldest && !try_move(*c, call_state::queued, call_state::running)) {
    finished_.push_back(c);  // abandoned just now
    return false;
  }
  const std::optional<std::uint32_t> index = task_registry::instance().find(job->task);
  KNIT_ASSERT(index.has_value());  // submit_process refused an unknown name
  const unsigned k = s.next_lane;
  region_header& h = child.region.header();
  lane_words& lane = child.region.lane(k);
  child.end->in_call.store(true, std::memory_order_release);  // as channel.cpp: its death is ours
  std::memcpy(child.region.request_arena(k), job->bytes.data(), job->bytes.size());
  store(lane.task_index, index.value_or(~std::uint32_t{0}));
  store(lane.request_bytes, static_cast<std::uint64_t>(job->bytes.size()));
  at_ring_point(ring_point::host_publishing_request, h, lane);
  store(lane.request_seq, ++s.seq, std::memory_order_release);
  counters().calls.fetch_add(1, std::memory_order_relaxed);
  ring_if_sleeping(h.child_sleeping, child.request.get());
  s.next_lane = (k + 1) % child.region.lanes();
  s.flights.push_back({c, job, s.seq, k});
  ++in_children_;
  if (oldest && job->limits.stuck_after > steady::duration::zero()) {
    s.stuck_at = now + job->limits.stuck_after;
  }
  return true;
}

// An idle child, in turn; one found reaped while idle is released on the way.
process_host_ring::seat* process_host_ring::idle_seat() {
  for (unsigned k = 0; k < children_; ++k) {
    seat& s = seats_[(next_ + k) % children_];
    if (s.child && s.flights.empty() && !s.dead && reaped_already(s)) {
      // Killed while idle and reaped by the starter before this host's step saw its
      // pidfd: released here, and the call goes to another child (no call fails).
      s.dead = true;
      check_seat(s, {}, false);
    }
    if (s.child && !s.dead && s.flights.empty()) {
      next_ = (next_ + k + 1) % children_;
      return &s;
    }
  }
  return nullptr;
}

// A seat with no child that takes a new one from its box (a replacement, a standby
// child). A failed start fails `q`'s call, as on a worker thread (channel.cpp): `failed`.
process_host_ring::seat* process_host_ring::new_child_seat(queued& q, bool& failed) {
  for (unsigned k = 0; k < children_; ++k) {
    seat& s = seats_[k];
    if (s.child) continue;
    try {
      std::optional<child_process> c = s.box->try_take();
      if (!c) continue;
      s.child = std::move(*c);
      s.dead = false;
      s.next_lane = 0;  // a new child starts at lane 0, its answer_seqs at 0
      s.lane_answered.fill(0);
      s.stuck_at = steady::time_point::max();
      // Held at 1: this host never spins, so the child always rings `answer`.
      store(s.child->region.header().host_sleeping, std::uint32_t{1});
      watch(k);
      if (!s.dead) return &s;
    } catch (const process_error& e) {
      std::string what = message_of(e);
      if (what.starts_with("knit: ")) what.erase(0, 6);
      fail_unsent(q.call, *q.job,
                  std::make_exception_ptr(
                      process_error(static_cast<errc>(e.code().value()),
                                    "knit: process task '" + q.job->task + "': " + what)));
      failed = true;
      return nullptr;
    }
  }
  return nullptr;
}

// A busy child with a free lane, the one with the fewest calls.
process_host_ring::seat* process_host_ring::least_busy_seat() {
  seat* best = nullptr;
  for (seat& s : seats_) {
    if (!s.child || s.dead || s.flights.size() >= s.child->region.lanes()) continue;
    if (!best || s.flights.size() < best->flights.size()) best = &s;
  }
  return best;
}

void process_host_ring::send_queued() {
  while (!queue_.empty()) {
    queued& q = queue_.front();
    if (q.call->state.load(std::memory_order_relaxed) == call_state::abandoned) {
      finished_.push_back(q.call);  // cancelled, or past its deadline, while queued: never run
      queue_.pop_front();
      continue;
    }
    bool failed = false;
    seat* to = idle_seat();
    if (!to) to = new_child_seat(q, failed);
    if (failed) {
      queue_.pop_front();
      continue;
    }
    if (!to) to = least_busy_seat();
    if (!to) return;  // every lane full or every child starting: a step sends it later
    queued next = std::move(queue_.front());
    queue_.pop_front();
    send(*to, next.call, next.job);
  }
}

// The oldest call was answered: the next one in the child (if any) becomes the running
// one, its stuck limit counted from now (the host's first sight of it running).
void process_host_ring::next_in_child(seat& s, steady::time_point now) {
  s.stuck_at = steady::time_point::max();
  if (s.flights.empty()) {
    s.child->end->in_call.store(false, std::memory_order_release);  // idle: no call's death
    return;
  }
  flight& f = s.flights.front();
  if (f.call && !try_move(*f.call, call_state::queued, call_state::running)) {
    withdraw(s, f);  // abandoned while it waited in its lane (its error delivered then)
  }
  if (f.job->limits.stuck_after > steady::duration::zero()) {
    s.stuck_at = now + f.job->limits.stuck_after;
  }
}

// Flight `f`, abandoned (cancelled, past its deadline) while it waited in its lane: its
// record handed back now, and the child asked not to run it (cancel_seq, advisory).
void process_host_ring::withdraw(seat& s, flight& f) {
  finished_.push_back(f.call);
  f.call = nullptr;
  f.withdrawn = true;
  store(s.child->region.lane(f.lane).cancel_seq, f.seq);
}

// Every call behind the running one that the host has given up since the last step.
void process_host_ring::withdraw_abandoned(seat& s) {
  for (std::size_t i = 1; i < s.flights.size(); ++i) {
    flight& f = s.flights[i];
    if (f.call && f.call->state.load(std::memory_order_relaxed) == call_state::abandoned) {
      withdraw(s, f);
    }
  }
}

// Takes the answers `s`'s child has written, oldest first, each completing its call. Stops
// at the first call with none yet (all), or at one whose answer is broken or out of
// memory: that call stays the oldest, its verdict in `verdict`, for the caller.
process_host_ring::taken process_host_ring::take_answers(seat& s, steady::time_point now,
                                                         answer_verdict& verdict) {
  child_process& child = *s.child;
  const std::size_t arena = child.region.arena_bytes();
  while (!s.flights.empty()) {
    flight& f = s.flights.front();
    lane_words& lane = child.region.lane(f.lane);
    if (load(lane.answer_seq, std::memory_order_acquire) == s.lane_answered[f.lane]) {
      return taken::all;
    }
    // Every word read once, then checked: the child may have scribbled on any of them.
    verdict = check_answer(read_answer_words(lane), f.seq, arena, f.withdrawn);
    if (verdict.kind == answer_kind::broken) return taken::broken;
    if (verdict.kind == answer_kind::out_of_memory) return taken::out_of_memory;
    if (verdict.kind == answer_kind::cancelled) {
      counters().calls_withdrawn.fetch_add(1, std::memory_order_relaxed);
    }
    s.lane_answered[f.lane] = f.seq;
    flight done = std::move(f);
    s.flights.pop_front();
    --in_children_;
    if (done.call) {
      std::exception_ptr error;
      std::string answer;
      const std::string& task = done.job->task;
      try {
        answer = take_answer(verdict, task, child.region.answer_arena(done.lane), arena,
                             [&] { return who(s, task); });
      } catch (...) {
        error = std::current_exception();
      }
      complete(done.call, *done.job, std::move(error), std::move(answer));
    }
    next_in_child(s, now);
  }
  return taken::all;
}

// `s`'s child is stopped (its mapping final): the oldest call in it fails with `oldest`
// (dropped if it was handed back), the ones behind it with `behind` when given, else,
// never started, back to the head of the FIFO in their order. Then the child is released.
void process_host_ring::end_flights(seat& s, std::exception_ptr oldest, std::exception_ptr behind) {
  bool first = true;
  std::vector<queued> again;
  for (flight& f : s.flights) {
    KNIT_ASSERT(in_children_ > 0);
    --in_children_;
    if (!f.call) continue;
    if (first) {
      complete(f.call, *f.job, oldest, {});
    } else if (behind) {
      fail_unsent(f.call, *f.job, behind);
    } else {
      again.push_back({f.call, std::move(f.job)});
    }
    first = false;
  }
  queue_.insert(queue_.begin(), std::make_move_iterator(again.begin()),
                std::make_move_iterator(again.end()));
  s.flights.clear();
  s.stuck_at = steady::time_point::max();
  s.child.reset();  // closes its fds, unmaps its region
  s.dead = false;
}

void process_host_ring::check_seat(seat& s, steady::time_point now, bool clock_read) {
  if (!s.child) return;
  child_process& child = *s.child;
  region_header& h = child.region.header();
  const std::uint64_t id = child.id;
  if (s.flights.empty()) {
    if (!s.dead) return;
    // An idle child's death (killed from outside): no call fails; its fds and mapping are
    // released now, and the starter (which most likely reaped it) replaces it.
    const std::shared_ptr<child_end> end = child.end;
    end_seat_child(s, false);
    count_crash_once(*end);
    s.box->replace(id, /*crash=*/true);
    return;
  }
  answer_verdict verdict{answer_kind::ok, 0, {}};
  const taken at = take_answers(s, now, verdict);
  if (s.flights.empty()) return;  // every call answered
  if (at == taken::all && s.flights.size() > 1) withdraw_abandoned(s);
  const std::shared_ptr<child_end> end = child.end;
  const std::string task = s.flights.front().job->task;
  if (at == taken::broken) {
    // Its mapping cannot be trusted: a task gone wild may have written over any lane (an
    // answer not yet taken, a call behind that it was itself), so no call in it is sent
    // again, and every one fails.
    std::string message = broken_message(who(s, task), verdict);
    std::string how = stop_child(s, true);
    message += how;
    count_crash_once(*end);
    if (s.box->replace(id, /*crash=*/true)) message += "; crash loop: respawns back off";
    const std::string behind = who(s, s.flights.size() > 1 ? s.flights[1].job->task : task) +
                               ": was in the lanes of a worker that broke the protocol (" +
                               verdict.why + "); the worker was killed: " + how;
    end_flights(s, std::make_exception_ptr(process_error(errc::worker_crashed, message)),
                std::make_exception_ptr(process_error(errc::worker_crashed, behind)));
    return;
  }
  if (at == taken::out_of_memory) {
    counters().memory_limit_kills.fetch_add(1, std::memory_order_relaxed);
    std::string message = who(s, task) + ": went over the worker's memory limit of " +
                          std::to_string(options_.memory_limit) +
                          " bytes (process_options::memory_limit: an allocation failed); "
                          "the worker is replaced: ";
    message += stop_child(s, true);
    s.box->replace(id, /*crash=*/false);
    end_flights(s, std::make_exception_ptr(process_error(errc::memory_limit, message)));
    return;
  }
  if (s.dead) {
    // Its death's edge came before the answers were read above: every answer it wrote is
    // taken, and the oldest call left is the one it died running.
    std::string who_it_was = who(s, task);
    // Written by the child's SIGSYS handler just before it exited (sandbox.hpp).
    const std::uint64_t refused = load(h.sandbox_syscall, std::memory_order_acquire);
    std::string how = stop_child(s, true);
    if (refused != 0) {
      counters().sandbox_kills.fetch_add(1, std::memory_order_relaxed);
      std::string message = who_it_was + ": the sandbox refused " + syscall_name(refused - 1) +
                            "; the worker " + how + " and is replaced";
      if (s.box->replace(id, /*crash=*/true)) message += "; crash loop: respawns back off";
      end_flights(s, std::make_exception_ptr(process_error(errc::sandbox_violation, message)));
      return;
    }
    count_crash_once(*end);
    std::string message = who_it_was + ": the worker " + how + " during the call";
    if (s.box->replace(id, /*crash=*/true)) message += "; crash loop: respawns back off";
    end_flights(s, std::make_exception_ptr(process_error(errc::worker_crashed, message)));
    return;
  }
  flight& oldest = s.flights.front();
  lane_words& lane = child.region.lane(oldest.lane);
  at_ring_point(ring_point::host_read_answers, h, lane);  // no answer yet: the host may sleep
  if (!clock_read) return;
  const steady::time_point deadline = oldest.job->limits.deadline;
  const bool past_deadline = now >= deadline;
  const bool stuck = now >= s.stuck_at && s.stuck_at < deadline;
  if (!past_deadline && !stuck) return;
  at_ring_point(ring_point::host_killing_child, h, lane);
  // A kill, not a crash: counted before the reap (whoever sees it gone sees it counted).
  counters().killed.fetch_add(1, std::memory_order_relaxed);
  if (stuck) calls_stuck_.bump();
  const std::uint64_t killed_seq = oldest.seq;
  std::string message =
      who(s, task) + (stuck ? ": stuck (ran past its stuck limit)" : ": ran past its deadline");
  message += "; the worker was killed: " + stop_child(s, true);
  s.box->replace(id, /*crash=*/false);  // started at once: a kill is no crash
  // Dead now, its mapping final: an answer it wrote since the read above is taken, so
  // that call is not failed for nothing, and the call behind it may then have started.
  take_answers(s, now, verdict);
  const errc code = stuck ? errc::stuck : errc::timed_out;
  if (!s.flights.empty() && s.flights.front().seq == killed_seq) {
    end_flights(s, std::make_exception_ptr(process_error(code, message)));
  } else {
    end_flights(s, std::make_exception_ptr(process_error(
                       errc::worker_crashed,
                       who(s, s.flights.empty() ? task : s.flights.front().job->task) +
                           ": the worker was killed as this call may have started (the call "
                           "before it ran past its limit: " +
                           message + ")")));
  }
}

const std::vector<call_base*>& process_host_ring::step() {
  handed_.clear();
  bell_rang_ = true;
  if (seats_.empty()) return handed_;  // no process call yet: nothing to look at
  const int n = ::epoll_wait(epoll_.get(), events_.data(), static_cast<int>(events_.size()), 0);
  bell_rang_ = n < 0;  // a failed wait tells nothing: read the doorbell
  for (int i = 0; i < n; ++i) {
    const std::uint64_t what = events_[static_cast<std::size_t>(i)].data.u64;
    if (what == kBellEvent) {
      bell_rang_ = true;
    } else if (what == kStartsEvent) {
      std::uint64_t count;
      [[maybe_unused]] ssize_t r = ::read(starts_.get(), &count, sizeof count);
    } else if (what != kBellEvent && (what & 1) != 0) {
      seats_[what / 2].dead = true;  // its pidfd: kept until check_seat handles it
    }
  }
  const bool clock_read = in_children_ > 0;
  const steady::time_point now = clock_read ? steady::now() : steady::time_point{};
  for (seat& s : seats_) check_seat(s, now, clock_read);
  if (!queue_.empty()) send_queued();
  handed_.swap(finished_);
  return handed_;
}

std::optional<steady::time_point> process_host_ring::next_limit() const noexcept {
  std::optional<steady::time_point> best;
  for (const seat& s : seats_) {
    if (s.flights.empty()) continue;
    const steady::time_point at = std::min(s.stuck_at, s.flights.front().job->limits.deadline);
    if (at != steady::time_point::max() && (!best || at < *best)) best = at;
  }
  return best;
}

std::size_t process_host_ring::give_up() {
  std::size_t n = 0;
  for (seat& s : seats_) {
    if (s.flights.empty()) continue;
    const std::uint64_t id = s.child->id;
    const bool running = s.flights.front().call != nullptr;
    std::string message = who(s, s.flights.front().job->task) +
                          ": given up at the pool's shutdown deadline; the worker was killed: ";
    message += stop_child(s, true);
    s.box->replace(id, /*crash=*/false);
    auto error = std::make_exception_ptr(process_error(errc::cancelled, message));
    end_flights(s, error, error);
    if (running) ++n;
  }
  return n;
}

}  // namespace knit::detail

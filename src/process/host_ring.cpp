// process_host_ring: the host side of the host <-> child ring (protocol in host_ring.hpp),
// and submit_process's offer of its job to the host that enqueues the call.
#include "process/host_ring.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "call_state.hpp"
#include "invariant.hpp"
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

void at_ring_point(ring_point where, region_header& h) {
  if (ring_hook f = hook.load(std::memory_order_relaxed)) f(where, h);
}

constexpr std::uint64_t kStartsEvent = ~std::uint64_t{0};
constexpr std::uint64_t kBellEvent = ~std::uint64_t{0} - 1;

bool ring_wanted(const process_options& options) {
  if (options.host_ring) return true;
  const char* env = std::getenv("KNIT_PROCESS_HOST_RING");
  return env && std::string_view(env) == "1";
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

std::unique_ptr<process_host_ring> process_host_ring::make_if_enabled(int bell_fd,
                                                                      unsigned children) {
  process_options options = current_process_options();
  if (!ring_wanted(options)) return nullptr;
  return std::make_unique<process_host_ring>(bell_fd, children, std::move(options));
}

process_host_ring::process_host_ring(int bell_fd, unsigned children, process_options options)
    : options_(std::move(options)),
      children_(children),
      epoll_(::epoll_create1(EPOLL_CLOEXEC)),
      starts_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      seats_(children) {
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
    KNIT_ASSERT(s.call == nullptr);  // the host settled every call before it went away
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

void process_host_ring::claim_boxes() {
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

std::string process_host_ring::end_seat_child(seat& s, bool kill) {
  unwatch(s);
  std::string how = end_child(*s.child, kill);
  s.child.reset();  // closes its fds, unmaps its region: at once, not at its next call
  s.dead = false;
  return how;
}

// Whether the starter has reaped this seat's child (it saw the pidfd first).
bool process_host_ring::reaped_already(seat& s) {
  std::lock_guard lock(s.child->end->mutex);
  return s.child->end->reaped;
}

void process_host_ring::accept(call_base* c, std::shared_ptr<process_job> job) {
  if (!seats_.front().box) claim_boxes();
  queue_.push_back({c, std::move(job)});
  send_queued();
  // Finished without a child (over the arena, a failed start): no child will ring, so the
  // ring rings itself for the drain that hands it back.
  if (!finished_.empty()) {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(starts_.get(), &one, sizeof one);
  }
}

// The call's outcome into its record (run() on this thread, through run_process_job), then
// the record to the host's drain.
void process_host_ring::finish(seat& s, std::exception_ptr error, std::string answer) {
  call_base* c = s.call;
  s.job->answered = true;
  s.job->error = std::move(error);
  s.job->answer = std::move(answer);
  c->run();
  try_move(*c, call_state::running, call_state::done);
  finished_.push_back(c);
  s.call = nullptr;
  s.job.reset();
  s.stuck_at = steady::time_point::max();
  KNIT_ASSERT(running_ > 0);
  --running_;
}

// Sends `c` to idle seat `s`. False when `c` was finished without a send (abandoned, over
// the arena, past its deadline): the seat stays idle.
bool process_host_ring::send(seat& s, call_base* c, std::shared_ptr<process_job>& job) {
  if (!try_move(*c, call_state::queued, call_state::running)) {  // cancelled, or its deadline
    finished_.push_back(c);
    return false;
  }
  s.call = c;
  s.job = job;
  ++running_;
  const auto now = steady::now();
  if (job->bytes.size() > options_.arena_bytes) {
    finish(s,
           std::make_exception_ptr(process_error(
               errc::payload_too_large, "knit: process task '" + job->task + "': request of " +
                                            std::to_string(job->bytes.size()) +
                                            " bytes is over the arena of " +
                                            std::to_string(options_.arena_bytes) +
                                            " bytes (process_options::arena_bytes); not sent")),
           {});
    return false;
  }
  if (now >= job->limits.deadline) {
    finish(s,
           std::make_exception_ptr(process_error(
               errc::timed_out,
               "knit: process task '" + job->task + "' ran past its deadline before it was sent")),
           {});
    return false;
  }
  const std::optional<std::uint32_t> index = task_registry::instance().find(job->task);
  KNIT_ASSERT(index.has_value());  // submit_process refused an unknown name
  child_process& child = *s.child;
  region_header& h = child.region.header();
  child.end->in_call.store(true, std::memory_order_release);  // as channel.cpp: its death is ours
  std::memcpy(child.region.request_arena(), job->bytes.data(), job->bytes.size());
  store(h.task_index, index.value_or(~std::uint32_t{0}));
  store(h.request_bytes, static_cast<std::uint64_t>(job->bytes.size()));
  at_ring_point(ring_point::host_publishing_request, h);
  store(h.request_seq, ++s.seq, std::memory_order_release);
  counters().calls.fetch_add(1, std::memory_order_relaxed);
  ring_if_sleeping(h.child_sleeping, child.request.get());
  if (job->limits.stuck_after > steady::duration::zero())
    s.stuck_at = now + job->limits.stuck_after;
  return true;
}

void process_host_ring::send_queued() {
  while (!queue_.empty()) {
    queued& q = queue_.front();
    if (q.call->state.load(std::memory_order_relaxed) == call_state::abandoned) {
      finished_.push_back(q.call);  // cancelled, or past its deadline, while queued: never run
      queue_.pop_front();
      continue;
    }
    seat* idle = nullptr;
    for (unsigned k = 0; k < children_ && !idle; ++k) {
      seat& s = seats_[(next_ + k) % children_];
      if (s.child && !s.call && !s.dead && reaped_already(s)) {
        // Killed while idle and reaped by the starter before this host's step saw its
        // pidfd: released here, and the call goes to another child (no call fails).
        s.dead = true;
        check_seat(s, {}, false);
      }
      if (s.child && !s.dead && !s.call) {
        idle = &s;
        next_ = (next_ + k + 1) % children_;
      }
    }
    bool failed = false;
    for (unsigned k = 0; k < children_ && !idle && !failed; ++k) {
      seat& s = seats_[k];
      if (s.child) continue;
      try {
        if (std::optional<child_process> c = s.box->try_take()) {
          s.child = std::move(*c);
          s.answered_seq = 0;  // a new child's answer_seq starts at 0
          s.dead = false;
          // Held at 1: this host never spins, so the child always rings `answer`.
          store(s.child->region.header().host_sleeping, std::uint32_t{1});
          watch(k);
          if (!s.dead) idle = &s;
        }
      } catch (const process_error& e) {
        // A failed start fails the call that takes it, as on a worker thread (channel.cpp).
        std::string what = message_of(e);
        if (what.starts_with("knit: ")) what.erase(0, 6);
        if (try_move(*q.call, call_state::queued, call_state::running)) {
          s.call = q.call;
          s.job = q.job;
          ++running_;
          finish(s,
                 std::make_exception_ptr(
                     process_error(static_cast<errc>(e.code().value()),
                                   "knit: process task '" + q.job->task + "': " + what)),
                 {});
        } else {
          finished_.push_back(q.call);
        }
        queue_.pop_front();
        failed = true;
      }
    }
    if (failed) continue;
    if (!idle) return;  // every child busy or starting: a step sends it when one is free
    queued next = std::move(queue_.front());
    queue_.pop_front();
    send(*idle, next.call, next.job);
  }
}

void process_host_ring::check_seat(seat& s, steady::time_point now, bool clock_read) {
  if (!s.child) return;
  child_process& child = *s.child;
  region_header& h = child.region.header();
  const std::uint64_t id = child.id;
  if (!s.call) {
    if (!s.dead) return;
    // An idle child's death (killed from outside): no call fails; its fds and mapping are
    // released now, and the starter (which most likely reaped it) replaces it.
    const std::shared_ptr<child_end> end = child.end;
    end_seat_child(s, false);
    count_crash_once(*end);
    s.box->replace(id, /*crash=*/true);
    return;
  }
  const std::string& task = s.job->task;
  if (load(h.answer_seq, std::memory_order_acquire) != s.answered_seq) {
    // Every word read once, then checked: the child may have scribbled on any of them.
    const std::size_t arena = child.region.arena_bytes();
    const answer_verdict verdict = check_answer(read_answer_words(h), s.seq, arena);
    if (verdict.kind == answer_kind::broken) {
      const std::shared_ptr<child_end> end = child.end;
      std::string message = broken_message(who(s, task), verdict);
      message += end_seat_child(s, true);
      count_crash_once(*end);
      if (s.box->replace(id, /*crash=*/true)) message += "; crash loop: respawns back off";
      finish(s, std::make_exception_ptr(process_error(errc::worker_crashed, message)), {});
      return;
    }
    s.answered_seq = s.seq;
    child.end->in_call.store(false, std::memory_order_release);
    if (verdict.kind == answer_kind::out_of_memory) {
      counters().memory_limit_kills.fetch_add(1, std::memory_order_relaxed);
      std::string message = who(s, task) + ": went over the worker's memory limit of " +
                            std::to_string(options_.memory_limit) +
                            " bytes (process_options::memory_limit: an allocation failed); "
                            "the worker is replaced: ";
      message += end_seat_child(s, true);
      s.box->replace(id, /*crash=*/false);
      finish(s, std::make_exception_ptr(process_error(errc::memory_limit, message)), {});
      return;
    }
    std::exception_ptr error;
    std::string answer;
    try {
      answer = take_answer(verdict, task, child.region.answer_arena(), arena,
                           [&] { return who(s, task); });
    } catch (...) {
      error = std::current_exception();
    }
    finish(s, std::move(error), std::move(answer));
    return;
  }
  if (s.dead) {
    const std::shared_ptr<child_end> end = child.end;
    std::string who_it_was = who(s, task);
    // Written by the child's SIGSYS handler just before it exited (sandbox.hpp).
    const std::uint64_t refused = load(h.sandbox_syscall, std::memory_order_acquire);
    std::string how = end_seat_child(s, true);
    if (refused != 0) {
      counters().sandbox_kills.fetch_add(1, std::memory_order_relaxed);
      std::string message = who_it_was + ": the sandbox refused " + syscall_name(refused - 1) +
                            "; the worker " + how + " and is replaced";
      if (s.box->replace(id, /*crash=*/true)) message += "; crash loop: respawns back off";
      finish(s, std::make_exception_ptr(process_error(errc::sandbox_violation, message)), {});
      return;
    }
    count_crash_once(*end);
    std::string message = who_it_was + ": the worker " + how + " during the call";
    if (s.box->replace(id, /*crash=*/true)) message += "; crash loop: respawns back off";
    finish(s, std::make_exception_ptr(process_error(errc::worker_crashed, message)), {});
    return;
  }
  at_ring_point(ring_point::host_read_answers, h);  // no answer yet: the host may sleep next
  if (!clock_read) return;
  const bool past_deadline = now >= s.job->limits.deadline;
  const bool stuck = now >= s.stuck_at && s.stuck_at < s.job->limits.deadline;
  if (!past_deadline && !stuck) return;
  // A kill, not a crash: counted before the reap (whoever sees it gone sees it counted).
  counters().killed.fetch_add(1, std::memory_order_relaxed);
  std::string message =
      who(s, task) + (stuck ? ": stuck (ran past its stuck limit)" : ": ran past its deadline");
  message += "; the worker was killed: " + end_seat_child(s, true);
  s.box->replace(id, /*crash=*/false);  // started at once: a kill is no crash
  finish(s, std::make_exception_ptr(process_error(stuck ? errc::stuck : errc::timed_out, message)),
         {});
}

const std::vector<call_base*>& process_host_ring::step() {
  handed_.clear();
  const int n = ::epoll_wait(epoll_.get(), events_.data(), static_cast<int>(events_.size()), 0);
  for (int i = 0; i < n; ++i) {
    const std::uint64_t what = events_[static_cast<std::size_t>(i)].data.u64;
    if (what == kStartsEvent) {
      std::uint64_t count;
      [[maybe_unused]] ssize_t r = ::read(starts_.get(), &count, sizeof count);
    } else if (what != kBellEvent && (what & 1) != 0) {
      seats_[what / 2].dead = true;  // its pidfd: kept until check_seat handles it
    }
  }
  const bool clock_read = running_ > 0;
  const steady::time_point now = clock_read ? steady::now() : steady::time_point{};
  for (seat& s : seats_) check_seat(s, now, clock_read);
  if (!queue_.empty()) send_queued();
  handed_.swap(finished_);
  return handed_;
}

std::optional<steady::time_point> process_host_ring::next_limit() const noexcept {
  std::optional<steady::time_point> best;
  for (const seat& s : seats_) {
    if (!s.call) continue;
    const steady::time_point at = std::min(s.stuck_at, s.job->limits.deadline);
    if (at != steady::time_point::max() && (!best || at < *best)) best = at;
  }
  return best;
}

std::size_t process_host_ring::give_up() {
  std::size_t n = 0;
  for (seat& s : seats_) {
    if (!s.call) continue;
    const std::uint64_t id = s.child->id;
    std::string message =
        who(s, s.job->task) + ": given up at the pool's shutdown deadline; the worker was killed: ";
    message += end_seat_child(s, true);
    s.box->replace(id, /*crash=*/false);
    finish(s, std::make_exception_ptr(process_error(errc::cancelled, message)), {});
    ++n;
  }
  return n;
}

}  // namespace knit::detail

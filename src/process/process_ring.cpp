// process_ring: the host side of the host <-> child ring (protocol in process_ring.hpp):
// accepting calls, the step, taking answers. Sending and moving: process_ring_send.cpp;
// deaths and limits: process_ring_ends.cpp.
#include "process/process_ring.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "call_state.hpp"
#include "heavy_share.hpp"
#include "invariant.hpp"
#include "pool_shared.hpp"
#include "process/counters.hpp"
#include "process/slot_bell.hpp"
#include "process/standby.hpp"
#include "process/task_registry.hpp"

namespace knit::detail {
namespace {

using steady = std::chrono::steady_clock;

// Writer: a test (set_ring_hook); partner: the ring's relaxed load at each point.
std::atomic<ring_hook> hook{nullptr};

constexpr std::uint64_t kStartsEvent = ~std::uint64_t{0};
constexpr std::uint64_t kBellEvent = ~std::uint64_t{0} - 1;

// The doorbell in the set. Edge: a step reports a write since the step before once, read
// by the drain or not (completion_watch::each_write never reads it; held level, a counter
// never read would be reported at every step).
epoll_event bell_watch() noexcept {
  epoll_event bell{};
  bell.events = EPOLLIN | EPOLLET;
  bell.data.u64 = kBellEvent;
  return bell;
}

}  // namespace

void at_ring_point(ring_point where, region_header& h, lane_words& lane) {
  if (ring_hook f = hook.load(std::memory_order_relaxed)) f(where, h, lane);
}

void set_ring_hook(ring_hook f) noexcept { hook.store(f, std::memory_order_relaxed); }

std::unique_ptr<process_ring> process_ring::make_if_tasks(int bell_fd, unsigned children,
                                                          const pool_options& pool,
                                                          const cpu_set_t& cpus,
                                                          host_counters& counters) {
  if (task_registry::instance().count() == 0) return nullptr;
  return std::make_unique<process_ring>(bell_fd, children, pool, cpus, counters);
}

namespace {
// A lent child's box starts no spare: the slot is retired once idle.
process_options without_spare(process_options o) {
  o.spare_child = false;
  return o;
}
}  // namespace

process_ring::process_ring(int bell_fd, unsigned children, const pool_options& pool,
                           const cpu_set_t& cpus, host_counters& counters)
    : options_(process_options_of(pool)),
      pool_key_(&pool),
      cpus_(cpus),
      children_(children),
      lent_limit_(pool.effective_lent_limit()),
      lend_after_(pool.lend_after),
      lent_options_(without_spare(options_)),
      epoll_(::epoll_create1(EPOLL_CLOEXEC)),
      starts_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      bell_fd_(bell_fd),
      host_counters_(counters) {
  if (!epoll_ || !starts_) {
    throw std::system_error(errno, std::generic_category(), "knit: process ring");
  }
  epoll_event bell = bell_watch();
  epoll_event starts{};
  starts.events = EPOLLIN;  // level: step() resets it
  starts.data.u64 = kStartsEvent;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, bell_fd, &bell) != 0 ||
      ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, starts_.get(), &starts) != 0) {
    throw std::system_error(errno, std::generic_category(), "knit: process ring epoll_ctl");
  }
  events_.resize(2 * (static_cast<std::size_t>(children) + lent_limit_) + 2);
}

process_ring::~process_ring() {
  for (ring_child& c : kids_) {
    // The host settled every call before it went away. A flight may remain without its call:
    // taken back (moved to another child, or withdrawn) and not yet answered `cancelled`,
    // which the child does only once the call before it in its lanes is answered. The
    // child is killed with it.
    KNIT_ASSERT(std::all_of(c.flights.begin(), c.flights.end(),
                            [](const flight& f) { return f.call == nullptr; }));
    c.flights.clear();
    if (c.child) end_idle_child(c, /*kill=*/true);
    if (c.box) c.box->abandon();  // clears the listener before starts_ closes
  }
}

std::string process_ring::who(const ring_child& c, std::string_view task) const {
  std::string w = "knit: process task '" + std::string(task) + "'";
  if (c.child) {
    w += " (pid " + std::to_string(c.child->pid) + ", knit-proc-" +
         std::to_string(c.box->number()) + ")";
  }
  return w;
}

// At the host's first process call: a ring whose host never makes one costs no box, child
// or system call (step() returns at once).
// The lent slots (after the children_) get a box at their first lend (process_ring_lend.cpp).
void process_ring::claim_boxes() {
  kids_.resize(children_ + lent_limit_);
  views_.resize(kids_.size());
  for (unsigned k = 0; k < children_; ++k) {
    kids_[k].box = claim_worker(pool_key_, options_, cpus_);
    kids_[k].box->set_listener(starts_.get());
  }
}

void process_ring::watch(unsigned i) {
  ring_child& c = kids_[i];
  epoll_event answer{};
  answer.events = EPOLLIN | EPOLLET;  // edge: the counter is never read (process_ring.hpp)
  answer.data.u64 = std::uint64_t{i} * 2;
  epoll_event death{};
  death.events = EPOLLIN | EPOLLET;
  death.data.u64 = std::uint64_t{i} * 2 + 1;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, c.child->answer.get(), &answer);
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, c.child->pidfd.get(), &death) != 0) {
    c.dead = true;  // cannot watch it: treat it as gone (ended and replaced next step)
  }
}

void process_ring::unwatch(ring_child& c) noexcept {
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c.child->answer.get(), nullptr);
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c.child->pidfd.get(), nullptr);
}

void process_ring::accept(call_base* call, std::shared_ptr<process_job> job) {
  if (kids_.empty()) claim_boxes();
  queue_.push_back({call, std::move(job)});
  send_queued();
  // Finished without a child (over the arena, a failed start): no child will ring, so the
  // ring rings itself for the drain that hands it back.
  if (!finished_.empty()) {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(starts_.get(), &one, sizeof one);
  }
}

// A running call's outcome into its job, run() on this thread (process_call_fn returns or
// throws it), then the record to the host's drain.
void process_ring::complete(call_base* call, process_job& job, std::exception_ptr error,
                            std::string answer) {
  job.error = std::move(error);
  job.answer = std::move(answer);
  call->run();
  try_move(*call, call_state::running, call_state::done);
  finished_.push_back(call);
}

// A call that fails before it reaches a child: run with `error` if it is still queued,
// else (abandoned: cancelled, past its deadline) handed back as it is.
void process_ring::fail_unsent(call_base* call, process_job& job, std::exception_ptr error,
                               bool running) {
  if (running || try_move(*call, call_state::queued, call_state::running)) {
    complete(call, job, std::move(error), {});
  } else {
    finished_.push_back(call);
  }
}

// Takes the answers `c`'s child has written, oldest first, each completing its call. Stops
// at the first call with none yet (all), or at one whose answer is broken or out of
// memory: that call stays the oldest, its verdict in `verdict`, for the caller.
process_ring::taken process_ring::take_answers(ring_child& c, steady::time_point now,
                                               answer_verdict& verdict) {
  child_process& child = *c.child;
  const std::size_t arena = child.region.arena_bytes();
  while (!c.flights.empty()) {
    flight& f = c.flights.front();
    lane_words& lane = child.region.lane(f.lane);
    // Every word read once, then checked: the child may have scribbled on any of them. An
    // answer_seq other than this call's nonce is no answer (stale, or forged ahead).
    const answer_words words = read_answer_words(lane);
    if (!answers_call(words, f.seq)) return taken::all;
    verdict = check_answer(words, f.seq, arena, f.taken_back);
    if (verdict.kind == answer_kind::broken) return taken::broken;
    if (verdict.kind == answer_kind::out_of_memory) return taken::out_of_memory;
    if (verdict.kind == answer_kind::cancelled && !f.moved) {
      counters().calls_withdrawn.fetch_add(1, std::memory_order_relaxed);
    }
    ++c.answers;
    c.lane_answered[f.lane] = f.seq;
    flight done = std::move(f);
    c.flights.pop_front();
    --in_children_;
    if (done.call) {
      std::exception_ptr error;
      std::string answer;
      const std::string& task = done.job->task;
      try {
        answer = take_answer(verdict, task, child.region.answer_arena(done.lane), arena,
                             [&] { return who(c, task); });
      } catch (...) {
        error = std::current_exception();
      }
      complete(done.call, *done.job, std::move(error), std::move(answer));
    }
    next_in_child(c, now);
  }
  return taken::all;
}

// The oldest call was answered: the next one in the child (if any) becomes the running
// one, its stuck limit counted from now (the host's first sight of it running).
void process_ring::next_in_child(ring_child& c, steady::time_point now) {
  c.stuck_at = steady::time_point::max();
  c.begin_by = steady::time_point::max();
  if (c.flights.empty()) {
    c.child->end->in_call.store(false, std::memory_order_release);  // idle: no call's death
    return;
  }
  if (now == steady::time_point{}) now = steady::now();
  c.oldest_since = now;
  c.begin_by = now + options_.begin_timeout;
  flight& f = c.flights.front();
  if (f.call && !try_move(*f.call, call_state::queued, call_state::running)) {
    // Abandoned while it waited in its lane (its error delivered then).
    finished_.push_back(f.call);
    f.call = nullptr;
    take_back(c, f);
  }
  if (f.job->limits.stuck_after > steady::duration::zero()) {
    c.stuck_at = now + f.job->limits.stuck_after;
  }
}

const std::vector<call_base*>& process_ring::step() {
  handed_.clear();
  bell_rang_ = true;
  bell_edge_taken_ = false;
  if (kids_.empty()) return handed_;  // no process call yet: nothing to look at
  const int n = ::epoll_wait(epoll_.get(), events_.data(), static_cast<int>(events_.size()), 0);
  bell_rang_ = n < 0;  // a failed wait tells nothing: read the doorbell
  for (int i = 0; i < n; ++i) {
    const std::uint64_t what = events_[static_cast<std::size_t>(i)].data.u64;
    if (what == kBellEvent) {
      bell_rang_ = true;
      bell_edge_taken_ = true;
    } else if (what == kStartsEvent) {
      std::uint64_t count;
      [[maybe_unused]] ssize_t r = ::read(starts_.get(), &count, sizeof count);
    } else if ((what & 1) != 0) {
      kids_[what / 2].dead = true;  // its pidfd: kept until check_child handles it
    } else {
      ++kids_[what / 2].rings;  // its answer eventfd: counted against its answers
    }
  }
  // A lent child's retirement is timed too: the clock while one is lent.
  const bool clock_read = in_children_ > 0 || lent_now_ > 0;
  const steady::time_point now = clock_read ? steady::now() : steady::time_point{};
  for (ring_child& c : kids_) check_child(c, now, clock_read);
  // Lent children first: one lent or up now takes its part in the moves and sends below.
  if (clock_read && lent_limit_ > 0) lend_if_starved(now);
  if (lent_now_ > 0) take_lent();
  move_waiting();
  if (!queue_.empty()) send_queued();
  if (lent_now_ > 0) retire_idle_lent(now);
  handed_.swap(finished_);
  return handed_;
}

// EPOLL_CTL_MOD checks the doorbell again and, readable (its counter unread), puts it back
// on the set's ready list: completion_fd() turns readable again.
void process_ring::requeue_bell() {
  epoll_event bell = bell_watch();
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, bell_fd_, &bell) != 0) {
    throw std::system_error(errno, std::generic_category(), "knit: process ring epoll_ctl");
  }
  bell_edge_taken_ = false;
}

std::optional<steady::time_point> process_ring::next_limit() const noexcept {
  std::optional<steady::time_point> best;
  for (const ring_child& c : kids_) {
    if (c.flights.empty()) continue;
    const steady::time_point at =
        std::min({c.stuck_at, c.begin_by, c.flights.front().job->limits.deadline});
    if (at != steady::time_point::max() && (!best || at < *best)) best = at;
  }
  if (const auto lend = lend_at(); lend && (!best || *lend < *best)) best = lend;
  return best;
}

std::size_t process_ring::records() const noexcept {
  std::size_t n = queue_.size();
  for (const ring_child& c : kids_) {
    for (const flight& f : c.flights) n += f.call != nullptr ? 1 : 0;
  }
  return n;
}

}  // namespace knit::detail

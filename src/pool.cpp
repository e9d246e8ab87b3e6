// pool: knit::pool's public calls, each sent to the calling thread's host (one lookup:
// pool_impl::host_here), and what the pool itself does: building the seats, shutdown (steps
// in knit/pool.hpp) and stats. Every host's own steps are host_state's; attaching and
// leaving are pool_host.cpp's.
//
// Shutdown, from any thread. A call's handler runs only on its host's thread, so the pool
// never finishes a host's calls itself: each host does, on its own thread, and the
// shutdown waits for that (took_part_). The calling thread, if it is a host, does its own
// part inside the call; another host does it when it leaves (host_state::leave) or when it
// calls shutdown too; the destructor does the building thread's attachment's part if that
// thread has not (it must not race that thread's calls). With a deadline, a host's calls
// not started by then are abandoned (errc::cancelled) and its running ones given up
// through the same retirement as a stuck call (worker_seats.cpp), their threads detached at
// step 4 unless their task returns first; each host reads the deadline the shutdown
// published (host_state::settle) and its report is added to the shutdown's.
#include "knit/pool.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "log_line.hpp"
#include "pool_impl.hpp"
#include "spin_gate.hpp"

namespace knit {
namespace detail {
namespace {

// The spin gate's CPU count (spin_gate.hpp), read on the building thread before any worker
// exists; only when the gate is on and there is a budget to gate.
bool spin_gate_allows(const pool_options& options) {
  if (!options.effective_spin_gate() || options.effective_spin_us() == 0) return true;
  return host_leaves_a_cpu_for_spinning(options);
}

std::logic_error not_a_host(const char* what) {
  return std::logic_error(std::string("knit::pool::") + what +
                          ": called from a thread that is no host thread of this pool: "
                          "attach it with knit::pool_host or knit::asio_host (the thread "
                          "that built the pool becomes one by submitting)");
}

}  // namespace

pool_impl::pool_impl(const pool_options& options)
    : shared_(options, spin_gate_allows(options)), builder_token_(this_thread_token()) {
  options.validate();
  shared_.wakes_may_wait_for_turn_end =
      options.wake_at_turn_end && !host_leaves_a_cpu_for_spinning(options);
  per_ring_ = std::bit_ceil(std::max<std::size_t>(options.queue_capacity, 1));
  shared_.seat_count = options.threads;
  shared_.seat_pending = std::make_unique<seat_hosts[]>(options.threads);
  shared_.pending_by_host = std::make_unique<host_pending[]>(options.max_hosts);
  shared_.hosts = std::make_unique<std::atomic<host_state*>[]>(options.max_hosts);
  for (unsigned h = 0; h < options.max_hosts; ++h) {
    shared_.hosts[h].store(nullptr, std::memory_order_relaxed);
  }
  host_states_.resize(options.max_hosts);
  host_in_use_.assign(options.max_hosts, false);
  took_part_.assign(options.max_hosts, false);
  // No host yet: the building thread attaches at its first submit, any thread with
  // knit::pool_host (pool_host.cpp).
  make_lent_slots();
  start_workers();
  if (worker_sched_requested(options)) await_sched();
}

pool_impl::~pool_impl() {
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (shared_.options.stop_timeout.count() > 0) {
    deadline = std::chrono::steady_clock::now() + shared_.options.stop_timeout;
  }
  const shutdown_report r = shutdown(shutdown_mode::drain, deadline, true);
  if (r.cancelled_at_deadline + r.abandoned_running + r.threads_detached > 0) {
    log_format("knit: pool destroyed past its stop_timeout (%lld ms): %s",
               static_cast<long long>(shared_.options.stop_timeout.count()), r.describe().c_str());
  }
}

host_state& pool_impl::host_for(const char* what) const {
  if (host_state* h = host_here()) return *h;
  throw not_a_host(what);
}

host_state* pool_impl::host_to_submit() {
  if (host_state* h = host_here()) return h;
  if (on_builder_thread()) return attach_builder();
  throw not_a_host("submit");
}

host_state* pool_impl::host_or_builder(const char* what) const {
  if (host_state* h = host_here()) return h;
  if (on_builder_thread()) return nullptr;
  throw not_a_host(what);
}

int pool_impl::completion_fd() noexcept {
  host_state* h = host_here();
  if (!h && on_builder_thread()) {
    try {
      h = attach_builder();
    } catch (...) {  // max_hosts attached, or no memory for its rings: no fd to give
    }
  }
  return h ? h->completion_fd() : -1;
}

shutdown_report pool_impl::shutdown(shutdown_mode mode,
                                    std::optional<std::chrono::steady_clock::time_point> deadline,
                                    bool from_destructor) {
  host_state* mine = host_here();
  bool runs = false;  // this call runs the shutdown; any other waits for it
  {
    std::lock_guard lock(hosts_mutex_);
    if (stop_phase_ == stop_phase::stopped) return {};
    if (mine && mine->in_step()) {
      throw std::logic_error("knit::pool::shutdown: called from inside a completion handler");
    }
    if (stop_phase_ == stop_phase::running) {
      runs = true;
      stop_phase_ = stop_phase::stopping;
      // Step 1: every host stops accepting, and no thread attaches any more (attach checks
      // `closed` under this mutex). Partner: host_state::accepting()'s acquire load; a
      // leaving host reads the deadline after it (host_state::pool_deadline).
      if (deadline) {
        const auto ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(deadline->time_since_epoch());
        shared_.stop_deadline_ns.store(std::max<std::int64_t>(ns.count(), 1),
                                       std::memory_order_relaxed);
      }
      shared_.closed.store(true, std::memory_order_release);
    }
    // ~pool may not race the building thread's calls (knit/pool.hpp): if that thread has
    // not done its attachment's part, the destructor does it here.
    if (!mine && from_destructor && builder_host_) mine = builder_host_;
    if (mine && took_part_[mine->index()]) mine = nullptr;
  }
  if (runs) wake_hosts();  // a loop asleep on its fd learns that accepting() turned false
  shutdown_report report;
  if (mine) {
    shutdown_report given;
    mine->finish(mode, deadline, given);  // steps 2 and 3 for this thread's own calls
    took_part(mine, given, !runs);
    if (runs) report = given;
  }
  if (!runs) {
    // Another thread runs it: return once it has stopped the workers.
    std::unique_lock lock(hosts_mutex_);
    hosts_changed_.wait(lock, [this] { return stop_phase_ == stop_phase::stopped; });
    return {};
  }
  await_hosts(deadline, report);  // steps 2 and 3 for every other host, on its thread
  stop_workers(report);           // step 4
  std::lock_guard lock(hosts_mutex_);
  stop_phase_ = stop_phase::stopped;
  hosts_changed_.notify_all();
  return report;
}

pool_stats pool_impl::stats() const {
  // Any thread: only counters (single-writer atomics), the seats (atomic pointers to slots
  // that live as long as the pool) and what the two mutexes guard.
  pool_stats s;
  {
    std::lock_guard lock(seats_mutex_);
    s.workers_replaced = workers_replaced_;
    s.calls_stuck = retirements_;  // every seat retired for a stuck record, whoever's
    s.lent_workers_started = lent_started_;
    s.lent_workers_now = lent_now();
    s.lent_workers_retired = lent_started_ - s.lent_workers_now;
    s.lent = lent_counters();
  }
  s.threads = shared_.seat_count;
  s.retired_running = retired_running_.load(std::memory_order_relaxed);
  for (unsigned i = 0; i < shared_.seat_count; ++i) {
    s.workers.push_back(shared_.seat(i).counters.snapshot());
  }
  std::lock_guard lock(hosts_mutex_);
  // Each index's counters carry over from one attachment to the next (a host_state lives
  // as long as the pool), so the totals only grow. The per-host list is there only while
  // two hosts or more are attached: a one-host pool's line is what it always was.
  const bool list = std::count(host_in_use_.begin(), host_in_use_.end(), true) > 1;
  for (std::size_t h = 0; h < host_states_.size(); ++h) {
    if (!host_states_[h]) continue;
    const host_stats one = host_states_[h]->stats();
    s.calls_submitted += one.calls_submitted;
    s.calls_completed += one.calls_completed;
    s.calls_rejected += one.calls_rejected;
    s.calls_backlogged += one.calls_backlogged;
    s.calls_cancelled += one.calls_cancelled;
    s.calls_timed_out += one.calls_timed_out;
    s.calls_failed += one.calls_failed;
    s.calls_stuck += host_states_[h]->ring_calls_stuck();
    // Retired first: a child lent and retired between the two loads is then not counted
    // retired without being counted started (lent_workers_now never below 0).
    const std::uint64_t ring_retired = host_states_[h]->ring_lent_retired();
    const std::uint64_t ring_started = host_states_[h]->ring_lent_started();
    s.lent_workers_started += ring_started;
    s.lent_workers_retired += ring_retired;
    s.lent_workers_now += ring_started - ring_retired;
    s.host_wakes += one.host_wakes;
    s.completion_batches += one.completion_batches;
    if (list && host_in_use_[h]) s.hosts.push_back(one);
  }
  return s;
}

}  // namespace detail

pool::pool(pool_options options) : impl_(std::make_unique<detail::pool_impl>(options)) {}
pool::~pool() = default;

// submit's steps (knit/pool.hpp), on the calling thread's host.
std::error_code pool::admit(detail::host_state*& host) {
  host = impl_->host_to_submit();
  if (!host) return make_error_code(errc::shut_down);  // the builder, after the shutdown began
  return host->admit();
}
void* pool::allocate_call(detail::host_state* host, std::size_t size, std::size_t align,
                          std::uint32_t& block) {
  return host->allocate(size, align, block);
}
void pool::free_call_memory(detail::host_state* host, void* memory, std::uint32_t block) noexcept {
  host->free_memory(memory, block);
}
call_id pool::enqueue(detail::host_state* host, detail::call_base* c, const call_options& options) {
  return host->enqueue(c, options);
}

call_id pool::enqueue_process(detail::host_state* host, detail::call_base* c,
                              const call_options& options,
                              const std::shared_ptr<detail::process_job>& job) {
  return host->enqueue_process(c, options, job);
}

bool pool::cancel(call_id id) {
  detail::host_state* h = impl_->host_or_builder("cancel");
  return h && h->cancel(id);
}
std::size_t pool::drain(completion_watch watch) {
  detail::host_state* h = impl_->host_or_builder("drain");
  return h ? h->drain(detail::reset_for(watch)) : 0;
}
std::size_t pool::poll() {
  detail::host_state* h = impl_->host_or_builder("poll");
  return h ? h->drain(detail::host_state::doorbell_reset::none) : 0;
}
bool pool::hold_wakes(bool on) {
  detail::host_state* h = impl_->host_or_builder("hold_wakes");
  // The building thread before its first submit: attach it now, as that submit would
  // (else the answer would be "not held" and the submits that follow would not hold).
  if (!h && on) h = impl_->host_to_submit();
  return h && h->hold_wakes(on);
}
void pool::flush_wakes() {
  detail::host_state* h = impl_->host_or_builder("flush_wakes");
  if (h) h->flush_wakes();
}
int pool::completion_fd() const noexcept { return impl_->completion_fd(); }

// The queries below answer, on a thread that is no host, for a host with no call: nothing
// pending, no deadline, no estimate (knit/pool.hpp, "Threading contract").
std::size_t pool::pending() const noexcept {
  const detail::host_state* h = impl_->host_here();
  return h ? h->pending() : 0;
}
std::chrono::nanoseconds pool::call_time_estimate() const noexcept {
  const detail::host_state* h = impl_->host_here();
  return h ? h->call_time_estimate() : std::chrono::nanoseconds(0);
}
std::optional<std::chrono::steady_clock::time_point> pool::next_deadline() const {
  detail::host_state* h = impl_->host_here();
  return h ? h->next_deadline() : std::nullopt;
}
bool pool::accepting() const noexcept {
  const detail::host_state* h = impl_->host_here();
  return h ? h->accepting() : !impl_->closed();
}
bool pool::is_host() const noexcept { return impl_->host_here() != nullptr; }

void pool::shutdown(shutdown_mode mode) { impl_->shutdown(mode, std::nullopt); }
shutdown_report pool::shutdown(shutdown_mode mode, std::chrono::steady_clock::time_point deadline) {
  return impl_->shutdown(mode, deadline);
}

pool_stats pool::stats() const { return impl_->stats(); }
const pool_options& pool::options() const noexcept { return impl_->options(); }
std::string pool::describe() const { return impl_->options().describe(); }

std::string shutdown_report::describe() const {
  return "cancelled " + std::to_string(cancelled_at_deadline) +
         " calls not started by the deadline, abandoned " + std::to_string(abandoned_running) +
         " running calls, detached " + std::to_string(threads_detached) +
         " worker threads still running their task";
}

}  // namespace knit

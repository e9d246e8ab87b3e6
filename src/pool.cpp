// pool: knit::pool's public calls, each sent to the calling thread's host (one lookup:
// pool_impl::host_here), and what the pool itself does: building host 0 and the seats,
// shutdown (steps in knit/pool.hpp) and stats. Every host's own steps are host_state's.
//
// Shutdown with a deadline: calls of host 0 not started by then are abandoned
// (errc::cancelled); its running ones are given up through the same retirement as a stuck
// call (worker_seats.cpp), and their threads detached at step 4 unless their task returns
// first. An attached host's calls are delivered only on its own thread, so its leave does
// the same for them when it finds the deadline passed (host_state::settle), and adds what
// it gave up to the report (pool_host.cpp, await_attached_hosts).
#include "knit/pool.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <stdexcept>
#include <string>

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

}  // namespace

pool_impl::pool_impl(const pool_options& options)
    : shared_(options, spin_gate_allows(options)), host_token_(this_thread_token()) {
  options.validate();
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
  // Host 0, the building thread, known by its token (host_token_). The workers' start
  // publishes it.
  host_states_[0] = std::make_unique<host_state>(*this, shared_, 0, per_ring_);
  first_ = host_states_[0].get();
  shared_.hosts[0].store(first_, std::memory_order_relaxed);
  host_in_use_[0] = true;
  first_->attach();
  start_workers();
  if (worker_sched_requested(options)) await_sched();
}

pool_impl::~pool_impl() {
  if (stopped_) return;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (shared_.options.stop_timeout.count() > 0) {
    deadline = std::chrono::steady_clock::now() + shared_.options.stop_timeout;
  }
  // May run on another thread (documented): no host check; nothing shared is rewritten.
  const shutdown_report r = shutdown(shutdown_mode::drain, deadline, true);
  if (r.cancelled_at_deadline + r.abandoned_running + r.threads_detached > 0) {
    std::fprintf(stderr, "knit: pool destroyed past its stop_timeout (%lld ms): %s\n",
                 static_cast<long long>(shared_.options.stop_timeout.count()),
                 r.describe().c_str());
  }
}

namespace {
std::logic_error not_a_host(const char* what) {
  return std::logic_error(std::string("knit::pool::") + what +
                          ": called from a thread other than the pool's host thread (the "
                          "thread that constructed the pool); calls must be made from the "
                          "host thread, or from a thread attached with knit::pool_host or "
                          "knit::asio_host");
}
}  // namespace

host_state& pool_impl::host_for(const char* what) const {
  if (host_state* h = host_here()) return *h;
  throw not_a_host(what);
}

shutdown_report pool_impl::shutdown(shutdown_mode mode,
                                    std::optional<std::chrono::steady_clock::time_point> deadline,
                                    bool from_destructor) {
  // Host 0 only (an attached host gets the same error as a stranger).
  if (!from_destructor && this_thread_token() != host_token_) throw not_a_host("shutdown");
  shutdown_report report;
  if (stopped_) return report;
  if (first_->in_step()) {
    throw std::logic_error("knit::pool::shutdown: called from inside a completion handler");
  }
  // Step 1: every host stops accepting. Partner: host_state::accepting()'s acquire load;
  // a leaving host reads the deadline after it (host_state::pool_deadline).
  if (deadline) {
    const auto ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(deadline->time_since_epoch());
    shared_.stop_deadline_ns.store(std::max<std::int64_t>(ns.count(), 1),
                                   std::memory_order_relaxed);
  }
  shared_.closed.store(true, std::memory_order_release);
  wake_attached_hosts();                   // an idle loop asleep on its fd learns of it
  first_->finish(mode, deadline, report);  // steps 2 and 3 for host 0's own calls
  await_attached_hosts(deadline, report);  // steps 2 and 3 for theirs, by their leaves
  stop_workers(report);                    // step 4
  stopped_ = true;
  return report;
}

pool_stats pool_impl::stats() const {
  // Any host's thread: only counters (single-writer atomics), the seats (atomic pointers to
  // slots that live as long as the pool) and what the two mutexes guard.
  pool_stats s;
  {
    std::lock_guard lock(seats_mutex_);
    s.workers_replaced = workers_replaced_;
    s.calls_stuck = retirements_;  // every seat retired for a stuck record, whoever's
  }
  s.threads = shared_.seat_count;
  s.retired_running = retired_running_.load(std::memory_order_relaxed);
  for (unsigned i = 0; i < shared_.seat_count; ++i) {
    s.workers.push_back(shared_.seat(i).counters.snapshot());
  }
  std::lock_guard lock(hosts_mutex_);
  // Each index's counters carry over from one attachment to the next (a host_state lives
  // as long as the pool), so the totals only grow. The per-host list is there only while
  // a host other than host 0 is attached: a single-host pool's line is what it always was.
  const bool list = attached_count_.load(std::memory_order_relaxed) > 0;
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
  host = &impl_->host_for("submit");
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

bool pool::cancel(call_id id) { return impl_->host_for("cancel").cancel(id); }
std::size_t pool::drain() { return impl_->host_for("drain").drain(true); }
std::size_t pool::poll() { return impl_->host_for("drain").drain(false); }
int pool::completion_fd() const noexcept { return impl_->host_or_first().completion_fd(); }
std::size_t pool::pending() const noexcept { return impl_->host_or_first().pending(); }
std::chrono::nanoseconds pool::call_time_estimate() const noexcept {
  return impl_->host_or_first().call_time_estimate();
}
std::optional<std::chrono::steady_clock::time_point> pool::next_deadline() const {
  return impl_->host_or_first().next_deadline();
}
bool pool::accepting() const noexcept { return impl_->host_or_first().accepting(); }
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

// pool_host: the pool's hosts table: attaching a thread as a host (a knit::pool_host, or
// the building thread's own attachment at its first submit), a pool_host taking the
// building thread's attachment over, releasing an index, and the shutdown's wait for every
// host to take part (the protocol, and what leaving does, are in host_state.hpp). Attach
// and release take the pool's hosts mutex; nothing on the per-call path does.
#include "knit/pool_host.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "host_state.hpp"
#include "log_line.hpp"
#include "pool_impl.hpp"

namespace knit {
namespace detail {

unsigned pool_impl::free_index_or_throw(const char* who) {
  if (shared_.closed.load(std::memory_order_relaxed)) {
    throw std::logic_error(std::string(who) + ": the pool is shutting down");
  }
  unsigned h = 0;
  while (h < host_in_use_.size() && host_in_use_[h]) ++h;
  if (h >= host_in_use_.size()) {
    throw std::logic_error(std::string(who) +
                           ": max_hosts=" + std::to_string(shared_.options.max_hosts) +
                           " hosts are attached already");
  }
  if (!host_states_[h]) {
    host_states_[h] = std::make_unique<host_state>(*this, shared_, h, per_ring_);
    // Partner: the workers' acquire load in pool_shared::host.
    shared_.hosts[h].store(host_states_[h].get(), std::memory_order_release);
  }
  return h;
}

void pool_impl::take_index(unsigned h) noexcept {
  host_in_use_[h] = true;
  took_part_[h] = false;
  host_states_[h]->attach();
}

// The building thread's first submit (or completion_fd) while it is no host: an attachment
// the pool holds, known by the thread's token (a binding would outlive a pool destroyed on
// another thread in that thread's storage). Null once the shutdown has begun.
host_state* pool_impl::attach_builder() {
  std::lock_guard lock(hosts_mutex_);
  if (shared_.closed.load(std::memory_order_relaxed)) return nullptr;
  const unsigned h = free_index_or_throw("knit::pool::submit");
  take_index(h);
  builder_host_ = host_states_[h].get();
  return builder_host_;
}

host_state* pool_impl::attach_host() {
  host_state* here = host_here();
  std::lock_guard lock(hosts_mutex_);
  if (here && here == builder_host_) {
    // The building thread's own attachment, taken over: from now on it is this pool_host's,
    // known by the binding, and it leaves when the pool_host goes.
    bind_host(this, here);  // may throw (too many pools on this thread): nothing changed yet
    builder_host_ = nullptr;
    bound_count_.store(bound_count_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return here;
  }
  if (here) throw std::logic_error("knit::pool_host: this thread is already a host of this pool");
  const unsigned h = free_index_or_throw("knit::pool_host");
  host_state* state = host_states_[h].get();
  bind_host(this, state);  // may throw (too many pools on this thread): nothing taken yet
  bound_count_.store(bound_count_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  take_index(h);
  return state;
}

void pool_impl::release_host(host_state* h) noexcept {
  // From here this thread is no host of the pool: a handler still running (a leave from
  // inside it) gets the no-host std::logic_error from submit.
  bind_host(this, nullptr);
  // Left from inside one of its own handlers: the enclosing step still uses this host's
  // state, so the index waits for it to end (host_state::step_scope).
  if (h->in_step()) {
    h->release_when_steps_end();
    return;
  }
  free_index(h);
}

void pool_impl::free_index(host_state* h) noexcept {
  std::lock_guard lock(hosts_mutex_);
  host_in_use_[h->index()] = false;
  bound_count_.store(bound_count_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  // Under the lock (interleaving "the_builders_shutdown_waits_for_attached_hosts_to_leave"):
  // the shutdown's wait may return and the pool be destroyed, condition variable included,
  // as soon as the waiter can take the lock; this thread touches nothing of the pool after.
  hosts_changed_.notify_all();
}

// Shutdown, once admission is closed: every host's completion fd turns readable, so a loop
// asleep on it wakes, finds accepting() false and leaves (or drains what it has left).
void pool_impl::wake_hosts() noexcept {
  std::lock_guard lock(hosts_mutex_);
  for (std::size_t h = 0; h < host_states_.size(); ++h) {
    if (host_in_use_[h] && !took_part_[h]) host_states_[h]->wake();
  }
}

void pool_impl::add_given_up(const shutdown_report& given) noexcept {
  if (!given.deadline_passed) return;
  std::lock_guard lock(hosts_mutex_);
  given_up_by_hosts_.deadline_passed = true;
  given_up_by_hosts_.cancelled_at_deadline += given.cancelled_at_deadline;
  given_up_by_hosts_.abandoned_running += given.abandoned_running;
}

// A host that finished its calls in a shutdown called on its thread (or the building
// thread's attachment, finished by the destructor): what it gave up goes to the report of
// the shutdown that runs, unless that is this very call (`into_report` false).
void pool_impl::took_part(host_state* h, const shutdown_report& given, bool into_report) noexcept {
  if (into_report) add_given_up(given);
  std::lock_guard lock(hosts_mutex_);
  took_part_[h->index()] = true;
  hosts_changed_.notify_all();  // under the lock: see free_index
}

bool pool_impl::every_host_took_part() const noexcept {
  for (std::size_t h = 0; h < host_in_use_.size(); ++h) {
    if (host_in_use_[h] && !took_part_[h]) return false;
  }
  return true;
}

// Shutdown, before stopping the workers: every host's calls come back through them, and
// only its own thread may deliver them, so every host must have taken part first (knit/
// pool.hpp, "Shutdown"): left, or finished its calls in a shutdown called on its thread. A
// host doing so past the deadline gives up what it has left on its own thread (host_state::
// settle, which reads the deadline the shutdown published), so it is done once its thread
// runs; kGrace is that time. A host that has not taken part after it never will: a bug in
// the program, and the workers cannot stop under it.
void pool_impl::await_hosts(std::optional<std::chrono::steady_clock::time_point> deadline,
                            shutdown_report& report) {
  constexpr auto kGrace = std::chrono::seconds(5);
  std::unique_lock lock(hosts_mutex_);
  auto done = [this] { return every_host_took_part(); };
  if (!deadline) {
    hosts_changed_.wait(lock, done);
  } else if (!hosts_changed_.wait_until(lock, *deadline, done)) {
    // Past the deadline: a leave asleep on its fd wakes and gives up (it also wakes at the
    // deadline by itself; this covers a loop asleep on its fd with nothing pending).
    for (std::size_t h = 0; h < host_states_.size(); ++h) {
      if (host_in_use_[h] && !took_part_[h]) host_states_[h]->wake();
    }
    if (!hosts_changed_.wait_until(lock, *deadline + kGrace, done)) {
      unsigned left = 0;
      for (std::size_t h = 0; h < host_in_use_.size(); ++h) {
        left += host_in_use_[h] && !took_part_[h];
      }
      log_format(
          "knit: pool shut down with %u host(s) that neither left nor finished their "
          "calls %lld s past its deadline: its workers cannot stop under them; "
          "aborting",
          left, static_cast<long long>(kGrace.count()));
      std::abort();
    }
  }
  report.deadline_passed = report.deadline_passed || given_up_by_hosts_.deadline_passed;
  report.cancelled_at_deadline += given_up_by_hosts_.cancelled_at_deadline;
  report.abandoned_running += given_up_by_hosts_.abandoned_running;
}

}  // namespace detail

pool_host::pool_host(pool& p) : pool_(&p), state_(p.impl_->attach_host()) {}

pool_host::~pool_host() {
  if (detail::bound_host(pool_->impl_.get()) != state_) {
    detail::log_line("knit::pool_host: destroyed on a thread other than its own");
    std::abort();
  }
  state_->leave();
  pool_->impl_->release_host(state_);
}

bool pool_host::cancel(call_id id) { return state_->cancel(id); }
int pool_host::completion_fd() const noexcept { return state_->completion_fd(); }
std::size_t pool_host::drain(completion_watch watch) {
  return state_->drain(detail::reset_for(watch));
}
std::size_t pool_host::poll() { return state_->drain(detail::host_state::doorbell_reset::none); }
shutdown_report pool_host::give_up() { return state_->give_up(); }
std::size_t pool_host::pending() const noexcept { return state_->pending(); }
std::optional<std::chrono::steady_clock::time_point> pool_host::next_deadline() const {
  return state_->next_deadline();
}
bool pool_host::accepting() const noexcept { return state_->accepting(); }
host_stats pool_host::stats() const noexcept { return state_->stats(); }
unsigned pool_host::index() const noexcept { return state_->index(); }

}  // namespace knit

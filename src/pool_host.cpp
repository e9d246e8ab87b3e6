// pool_host: attaching a thread to a pool as one more host, and releasing it (the
// protocol, and what leaving does, are in host_state.hpp). Attach and release take the
// pool's hosts mutex; nothing on the per-call path does.
#include "knit/pool_host.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "host_state.hpp"
#include "pool_impl.hpp"

namespace knit {
namespace detail {

host_state* pool_impl::attach_host() {
  if (host_here()) {
    throw std::logic_error("knit::pool_host: this thread is already a host of this pool");
  }
  std::lock_guard lock(hosts_mutex_);
  if (shared_.closed.load(std::memory_order_relaxed)) {
    throw std::logic_error("knit::pool_host: the pool is shutting down");
  }
  unsigned h = 1;
  while (h < host_in_use_.size() && host_in_use_[h]) ++h;
  if (h >= host_in_use_.size()) {
    throw std::logic_error(
        "knit::pool_host: max_hosts=" + std::to_string(shared_.options.max_hosts) +
        " hosts are attached already");
  }
  if (!host_states_[h]) {
    host_states_[h] = std::make_unique<host_state>(*this, shared_, h, per_ring_);
    // Partner: the workers' acquire load in pool_shared::attached_host.
    shared_.hosts[h].store(host_states_[h].get(), std::memory_order_release);
  }
  host_state* state = host_states_[h].get();
  bind_host(this, state);  // may throw (too many pools on this thread): nothing taken yet
  host_in_use_[h] = true;
  attached_count_.store(attached_count_.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
  state->attach();
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
  attached_count_.store(attached_count_.load(std::memory_order_relaxed) - 1,
                        std::memory_order_relaxed);
  // Under the lock (interleaving "the_builders_shutdown_waits_for_attached_hosts_to_leave"):
  // the builder's wait may return and destroy the pool, condition variable included, as
  // soon as it can take the lock; this thread touches nothing of the pool after it.
  hosts_left_.notify_all();
}

// Shutdown, once admission is closed: every attached host's completion fd turns readable,
// so a loop asleep on it wakes, finds accepting() false and leaves.
void pool_impl::wake_attached_hosts() noexcept {
  std::lock_guard lock(hosts_mutex_);
  for (std::size_t h = 1; h < host_states_.size(); ++h) {
    if (host_in_use_[h]) host_states_[h]->wake();
  }
}

void pool_impl::add_given_up(const shutdown_report& given) noexcept {
  if (!given.deadline_passed) return;
  std::lock_guard lock(hosts_mutex_);
  given_up_by_hosts_.deadline_passed = true;
  given_up_by_hosts_.cancelled_at_deadline += given.cancelled_at_deadline;
  given_up_by_hosts_.abandoned_running += given.abandoned_running;
}

// Shutdown, before stopping the workers: the attached hosts' calls come back through them,
// so every host must have left first (knit/pool_host.hpp, "The pool's shutdown"). A host
// leaving past the deadline gives up what it has left on its own thread (host_state::
// settle, which reads the deadline the shutdown published), so its leave ends once its
// thread runs; kLeaveGrace is that time. A host still attached after it is not leaving at
// all: a bug in the program, and the workers cannot stop under it.
void pool_impl::await_attached_hosts(std::optional<std::chrono::steady_clock::time_point> deadline,
                                     shutdown_report& report) {
  constexpr auto kLeaveGrace = std::chrono::seconds(5);
  std::unique_lock lock(hosts_mutex_);
  auto none_left = [this] { return attached_count_.load(std::memory_order_relaxed) == 0; };
  if (!deadline) {
    hosts_left_.wait(lock, none_left);
  } else if (!hosts_left_.wait_until(lock, *deadline, none_left)) {
    // Past the deadline: a leave asleep on its fd wakes and gives up (it also wakes at the
    // deadline by itself; this covers a loop asleep on its fd with nothing pending).
    for (std::size_t h = 1; h < host_states_.size(); ++h) {
      if (host_in_use_[h]) host_states_[h]->wake();
    }
    if (!hosts_left_.wait_until(lock, *deadline + kLeaveGrace, none_left)) {
      std::fprintf(stderr,
                   "knit: pool shut down with %u attached host(s) still attached %lld s past "
                   "its deadline: its workers cannot stop under them; aborting\n",
                   attached_count_.load(std::memory_order_relaxed),
                   static_cast<long long>(kLeaveGrace.count()));
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
    std::fprintf(stderr, "knit::pool_host: destroyed on a thread other than its own\n");
    std::abort();
  }
  state_->leave();
  pool_->impl_->release_host(state_);
}

bool pool_host::cancel(call_id id) { return state_->cancel(id); }
int pool_host::completion_fd() const noexcept { return state_->completion_fd(); }
std::size_t pool_host::drain() { return state_->drain(true); }
std::size_t pool_host::poll() { return state_->drain(false); }
shutdown_report pool_host::give_up() { return state_->give_up(); }
std::size_t pool_host::pending() const noexcept { return state_->pending(); }
std::optional<std::chrono::steady_clock::time_point> pool_host::next_deadline() const {
  return state_->next_deadline();
}
bool pool_host::accepting() const noexcept { return state_->accepting(); }
host_stats pool_host::stats() const noexcept { return state_->stats(); }
unsigned pool_host::index() const noexcept { return state_->index(); }

}  // namespace knit

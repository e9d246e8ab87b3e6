// pool_routing: knit::pool's per-host calls other than submit's steps (those stay in
// pool.cpp, in one translation unit with the builder's own path, so it stays inlined),
// each sent to the calling thread's host: the builder (pool_impl itself) or the thread's
// attached host (host_state.hpp). A thread that is neither fails the builder's check_host
// with std::logic_error. The builder's path pays one relaxed load (no host attached) or a
// thread-id compare before it is on its way.
#include "knit/pool.hpp"

#include <string>

#include "host_state.hpp"
#include "pool_impl.hpp"

namespace knit {

bool pool::cancel(call_id id) {
  detail::host_state* h = impl_->attached_here();
  return h ? h->cancel(id) : impl_->cancel(id);
}
int pool::completion_fd() const noexcept {
  detail::host_state* h = impl_->attached_here();
  return h ? h->completion_fd() : impl_->completion_fd();
}
std::size_t pool::drain() {
  detail::host_state* h = impl_->attached_here();
  return h ? h->drain(true) : impl_->drain();
}
std::size_t pool::poll() {
  detail::host_state* h = impl_->attached_here();
  return h ? h->drain(false) : impl_->drain(false);
}
std::size_t pool::pending() const noexcept {
  detail::host_state* h = impl_->attached_here();
  return h ? h->pending() : impl_->pending();
}
std::chrono::nanoseconds pool::call_time_estimate() const noexcept {
  detail::host_state* h = impl_->attached_here();
  return h ? h->call_time_estimate() : impl_->call_time_estimate();
}
std::optional<std::chrono::steady_clock::time_point> pool::next_deadline() const {
  detail::host_state* h = impl_->attached_here();
  return h ? h->next_deadline() : impl_->next_deadline();
}
bool pool::is_host() const noexcept {
  return impl_->is_first_host() || detail::bound_host(impl_.get()) != nullptr;
}
bool pool::accepting() const noexcept {
  detail::host_state* h = impl_->attached_here();
  return h ? h->accepting() : impl_->accepting();
}

std::string shutdown_report::describe() const {
  std::string s = "cancelled " + std::to_string(cancelled_at_deadline) +
                  " calls not started by the deadline, abandoned " +
                  std::to_string(abandoned_running) + " running calls, detached " +
                  std::to_string(threads_detached) + " worker threads still running their task";
  return s;
}

}  // namespace knit

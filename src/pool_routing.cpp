// pool_routing: knit::pool's per-host calls, each sent to the calling thread's host: the
// builder (pool_impl itself, the host pointer null) or the thread's attached host
// (host_state.hpp). A thread that is neither fails the builder's check_host with
// std::logic_error. The builder's own path pays one relaxed load (no host attached) or a
// thread-id compare before it is on its way.
#include "knit/pool.hpp"

#include "host_state.hpp"
#include "pool_impl.hpp"

namespace knit {

std::error_code pool::admit(detail::host_state*& host) {
  host = impl_->attached_here();
  return host ? host->admit() : impl_->admit();
}
void* pool::allocate_call(detail::host_state* host, std::size_t size, std::size_t align,
                          std::uint32_t& block) {
  return host ? host->allocate(size, align, block) : impl_->allocate(size, align, block);
}
void pool::free_call_memory(detail::host_state* host, void* memory, std::uint32_t block) noexcept {
  if (host) {
    host->free_memory(memory, block);
  } else {
    impl_->free_memory(memory, block);
  }
}
call_id pool::enqueue(detail::host_state* host, detail::call_base* c, const call_options& options) {
  return host ? host->enqueue(c, options) : impl_->enqueue(c, options);
}
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

}  // namespace knit

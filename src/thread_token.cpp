// thread_token: one counter for the process (thread_token.hpp says why not std::thread::id).
#include "thread_token.hpp"

#include <atomic>

namespace knit::detail {
namespace {
// Writer: every thread's first this_thread_token() (fetch_add); partner: none, the count
// only has to be unique, so relaxed.
std::atomic<std::uint64_t> tokens_drawn{0};
// initial-exec: read at a fixed offset from the thread pointer. In libknit.so the default
// (global-dynamic) model calls __tls_get_addr on every read, and pool::submit and
// pool::poll read this on every call (on_builder_thread, host_here). The cost: a dlopen()ed
// libknit.so takes its 72 bytes of TLS (this and host_state.cpp's bindings) from the
// surplus glibc keeps for such libraries (512 bytes by default since glibc 2.32).
__attribute__((tls_model("initial-exec"))) thread_local std::uint64_t tls_token = 0;
}  // namespace

std::uint64_t this_thread_token() noexcept {
  if (tls_token == 0) [[unlikely]]
    tls_token = tokens_drawn.fetch_add(1, std::memory_order_relaxed) + 1;
  return tls_token;
}

}  // namespace knit::detail

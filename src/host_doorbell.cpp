// host_doorbell: the eventfd half of the completion path (protocol in host_doorbell.hpp).
#include "host_doorbell.hpp"

#include <cerrno>
#include <cstdint>
#include <system_error>

#include <sys/eventfd.h>
#include <unistd.h>

#include "invariant.hpp"

namespace knit::detail {

host_doorbell::host_doorbell() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "knit: eventfd");
}

host_doorbell::~host_doorbell() {
  if (fd_ >= 0) ::close(fd_);
}

bool host_doorbell::notify() noexcept {
  std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with reset()'s fence
  if (signalled_.load(std::memory_order_relaxed)) return false;
  // Partner: the other workers' exchanges (one of them writes) and reset()'s exchange.
  if (signalled_.exchange(true, std::memory_order_acq_rel)) return false;
  const std::uint64_t one = 1;
  // A full counter (2^64-2, the only way a non-blocking write fails) cannot happen: one
  // write per round, and the host reads it each round or (each_write) never.
  [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof one);
  KNIT_ASSERT(n == static_cast<ssize_t>(sizeof one));
  return true;
}

void host_doorbell::reset(bool read) noexcept {
  if (read) {
    std::uint64_t value = 0;
    // EAGAIN when not signalled; nothing else can fail on our own non-blocking eventfd.
    [[maybe_unused]] const ssize_t n = ::read(fd_, &value, sizeof value);
    KNIT_ASSERT(n == static_cast<ssize_t>(sizeof value) || errno == EAGAIN);
  }
  signalled_.exchange(false, std::memory_order_acq_rel);  // partner: notify()'s exchange
  std::atomic_thread_fence(std::memory_order_seq_cst);    // pairs with notify()'s fence
}

}  // namespace knit::detail

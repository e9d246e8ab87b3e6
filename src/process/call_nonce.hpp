// call_nonce: the value that binds a child's answer to the call now in its lane (the lane's
// request_seq, shared_region.hpp). Chosen by the host per call from the kernel's random
// source, so a child cannot write an answer for a call it has not been sent: a task that
// pre-writes a well-formed answer into the next lane guesses 64 bits, and a wrong guess is
// no answer at all (never taken; the call waits for its own). Never 0 (a new lane's words)
// and never the lane's previous value (the child watches for a change); never ~0 either, so
// that neither claim a call's lane may hold (seq, ~seq) is 0, the unclaimed word.
// getrandom(2) fills 512 values at a time: one system call per 512 calls.
#pragma once

#include <sys/random.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <system_error>

namespace knit::detail {

class call_nonce {
 public:
  // A fresh value other than 0, ~0 and `previous`.
  std::uint64_t next(std::uint64_t previous) {
    for (;;) {
      if (used_ == pool_.size()) refill();
      const std::uint64_t v = pool_[used_++];
      if (v != 0 && v != ~std::uint64_t{0} && v != previous) return v;
    }
  }

 private:
  void refill() {
    auto* p = reinterpret_cast<char*>(pool_.data());
    std::size_t left = sizeof pool_;
    while (left > 0) {
      const ssize_t n = ::getrandom(p, left, 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw std::system_error(errno, std::generic_category(), "knit: getrandom");
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    used_ = 0;
  }

  std::array<std::uint64_t, 512> pool_{};
  std::size_t used_ = 512;
};

}  // namespace knit::detail

// The memory budget for bytes parked on behalf of unfinished writes (KNIT_MEMORY_BUDGET_MB):
// what a response costs while it is being written, user space and kernel together, and
// whether the server is over the budget (then new /ssr and /jwt are shed with 503).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <utility>

namespace knit_server {

// Policy only: the session reserves when it starts writing a response and gives the
// reservation back when the write completes (or the session ends); the session asks over()
// before it starts a heavy call.
//
// What a response of n bytes (head + body) parks while its write is unfinished:
//   user space  n                      the body and head strings, held until the write ends;
//   kernel      min(n, kernel_cap)     the socket's send queue, capped by SO_SNDBUF (the
//                                      listener sets it; Linux doubles the value it is given,
//                                      and kernel_cap is the doubled figure).
// So cost(n) = n + min(n, kernel_cap), and the sum of the costs of every unfinished write is
// what over() compares with the limit.
//
// One relaxed atomic shared by every event loop (KNIT_HOSTS) and KNIT_MODE=multi's threads,
// not a counter per loop: a per-loop slice of the budget would shed on one loop while another
// still has room (SO_REUSEPORT hashes connections to loops; a few hundred slow readers need
// not spread evenly), and per-loop counters summed at each heavy admission would cost H
// loads instead of one. The price is two uncontended read-modify-writes per response (one
// host thread: the line stays in its cache), and, with several loops, one shared cache line
// that moves at the rate of responses, not of bytes. Relaxed: the count guards nothing else,
// and a reservation seen a moment late sheds, or admits, one request late.
//
// The check is at admission, not at the write: a heavy call admitted just under the limit
// still writes its page. The overshoot is at most the heavy calls already admitted when the
// limit was crossed, each one response: inline, one; on a pool, those running or queued
// (KNIT_MAX_QUEUED bounds them).
class write_budget {
 public:
  // `limit` bytes of unfinished writes; each socket's send queue holds at most `kernel_cap`.
  write_budget(std::size_t limit, std::size_t kernel_cap) noexcept
      : limit_(limit), kernel_cap_(kernel_cap) {}

  write_budget(const write_budget&) = delete;
  write_budget& operator=(const write_budget&) = delete;

  // What a response of `bytes` parks until its write completes (see the class comment).
  static constexpr std::size_t cost(std::size_t bytes, std::size_t kernel_cap) noexcept {
    return bytes + std::min(bytes, kernel_cap);
  }
  std::size_t cost(std::size_t bytes) const noexcept { return cost(bytes, kernel_cap_); }

  // Bytes counted against the budget until release() or destruction. Move-only; a default
  // one holds nothing.
  class reservation {
   public:
    reservation() noexcept = default;
    reservation(reservation&& other) noexcept
        : budget_(std::exchange(other.budget_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
    reservation& operator=(reservation&& other) noexcept {
      if (this != &other) {
        release();
        budget_ = std::exchange(other.budget_, nullptr);
        bytes_ = std::exchange(other.bytes_, 0);
      }
      return *this;
    }
    reservation(const reservation&) = delete;
    reservation& operator=(const reservation&) = delete;
    ~reservation() { release(); }

    // Gives the bytes back; then holds nothing. Safe to call twice.
    void release() noexcept {
      if (budget_ != nullptr) budget_->parked_.fetch_sub(bytes_, std::memory_order_relaxed);
      budget_ = nullptr;
      bytes_ = 0;
    }
    std::size_t bytes() const noexcept { return bytes_; }

   private:
    friend class write_budget;
    reservation(write_budget& budget, std::size_t bytes) noexcept
        : budget_(&budget), bytes_(bytes) {}
    write_budget* budget_ = nullptr;
    std::size_t bytes_ = 0;
  };

  // Counts cost(response_bytes) until the reservation is released. Always succeeds: a
  // response that has been built is sent (shedding happens before a heavy call starts).
  reservation reserve(std::size_t response_bytes) noexcept {
    const std::size_t bytes = cost(response_bytes);
    parked_.fetch_add(bytes, std::memory_order_relaxed);
    return reservation(*this, bytes);
  }

  // More than the limit is parked: shed new heavy requests.
  bool over() const noexcept { return parked() > limit_; }

  std::size_t parked() const noexcept { return parked_.load(std::memory_order_relaxed); }
  std::size_t limit() const noexcept { return limit_; }
  std::size_t kernel_cap() const noexcept { return kernel_cap_; }

  // How many writes of `bytes` each fit before over() turns true: the banner's "slow
  // readers of the largest page admitted before shedding". over() turns true on the one
  // that crosses the limit, so that one counts too.
  std::size_t writes_admitted(std::size_t bytes) const noexcept {
    const std::size_t each = cost(bytes);
    return each == 0 ? 0 : limit_ / each + 1;
  }

 private:
  const std::size_t limit_;
  const std::size_t kernel_cap_;
  // Writers: every session's reserve and release, on any loop's thread. Partner: the relaxed
  // load in parked(), at each heavy admission and in knit-stats.
  std::atomic<std::size_t> parked_{0};
};

}  // namespace knit_server

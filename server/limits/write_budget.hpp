// The memory budget for bytes parked on behalf of unfinished writes (KNIT_MEMORY_BUDGET_MB):
// what a response costs while it is being written, user space and kernel together, and
// whether the server is over the budget (then new /ssr and /jwt are shed with 503).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <optional>
#include <utility>

namespace knit_server {

// Policy only. The session asks over() before it starts a heavy call (shed with 503: no CPU
// spent on a page there is no room for); it reserves a heavy call's page with try_reserve()
// once the page is built (no room: 503 instead of the page), and every other response, all
// small and made by the server itself, with reserve(); it gives the reservation back when the
// write completes (or the session ends).
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
// Two gates, because a pool may hold many admitted calls whose pages do not exist yet:
//   over()         at admission: less room is left than `shed_margin` (the cost of the
//                  largest page the server is known to make), so another page may not fit;
//   try_reserve()  at the write: the page's cost must fit under the limit, else the page is
//                  dropped and 503 sent. This makes the bound hard: heavy pages never park
//                  more than the limit together. Only the server's own small responses
//                  (/ping, 404, 4xx, 503: under 1 KiB each, one per connection) are reserved
//                  without a check, and may add up to connections x 2 KiB on top.
class write_budget {
 public:
  // `limit` bytes of unfinished writes; each socket's send queue holds at most `kernel_cap`;
  // over() once less than `shed_margin` bytes of room are left.
  write_budget(std::size_t limit, std::size_t kernel_cap, std::size_t shed_margin = 0) noexcept
      : limit_(limit), kernel_cap_(kernel_cap), shed_margin_(shed_margin) {}

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

  // Counts cost(response_bytes) until the reservation is released, whatever is parked: for
  // the server's own small responses.
  reservation reserve(std::size_t response_bytes) noexcept {
    const std::size_t bytes = cost(response_bytes);
    parked_.fetch_add(bytes, std::memory_order_relaxed);
    return reservation(*this, bytes);
  }

  // The same, only if cost(response_bytes) fits under the limit with what is parked; nullopt
  // (nothing counted) otherwise. Add, then take back if over: one read-modify-write in the
  // usual case; a rival may see the sum briefly high and shed one request it could have
  // taken, never the other way round.
  std::optional<reservation> try_reserve(std::size_t response_bytes) noexcept {
    const std::size_t bytes = cost(response_bytes);
    if (parked_.fetch_add(bytes, std::memory_order_relaxed) + bytes > limit_) {
      parked_.fetch_sub(bytes, std::memory_order_relaxed);
      return std::nullopt;
    }
    return reservation(*this, bytes);
  }

  // Less room left than shed_margin: shed new heavy requests before they run.
  bool over() const noexcept { return parked() + shed_margin_ > limit_; }

  std::size_t parked() const noexcept { return parked_.load(std::memory_order_relaxed); }
  std::size_t limit() const noexcept { return limit_; }
  std::size_t kernel_cap() const noexcept { return kernel_cap_; }

  // How many unfinished writes of `bytes` each fit under the limit: the banner's "slow
  // readers of the largest page before shedding".
  std::size_t writes_admitted(std::size_t bytes) const noexcept {
    const std::size_t each = cost(bytes);
    return each == 0 ? 0 : limit_ / each;
  }

 private:
  const std::size_t limit_;
  const std::size_t kernel_cap_;
  const std::size_t shed_margin_;
  // Writers: every session's reserve and release, on any loop's thread. Partner: the relaxed
  // load in parked(), at each heavy admission and in knit-stats.
  std::atomic<std::size_t> parked_{0};
};

}  // namespace knit_server

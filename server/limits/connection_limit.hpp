// KNIT_MAX_CONNECTIONS for the whole process: one count that every host's accept loop reserves
// from and every connection gives back when it ends.
#pragma once

#include <atomic>
#include <cstddef>

namespace knit_server {

// With KNIT_HOSTS=H the H accept loops share one limit, so the bound on open connections (and
// so on their memory, server-safety.md) means what it means with one loop. It is touched once
// when a connection opens and once when it closes, never per request: with one host the
// compare-exchange is uncontended.
class connection_limit {
 public:
  explicit connection_limit(std::size_t max) noexcept : max_(max) {}

  connection_limit(const connection_limit&) = delete;
  connection_limit& operator=(const connection_limit&) = delete;

  // Takes one of the max places; false (nothing taken) when every place is held. Exact: two
  // hosts racing for the last place cannot both get it.
  bool try_reserve() noexcept {
    std::size_t open = open_.load(std::memory_order_relaxed);
    while (open < max_) {
      if (open_.compare_exchange_weak(open, open + 1, std::memory_order_relaxed)) return true;
    }
    return false;
  }

  // Gives back a place taken by try_reserve().
  void release() noexcept { open_.fetch_sub(1, std::memory_order_relaxed); }

  // Places held now.
  std::size_t held() const noexcept { return open_.load(std::memory_order_relaxed); }

 private:
  const std::size_t max_;
  // Writers: every host's accept loop (try_reserve) and every session's end (release), each
  // a read-modify-write, so none is lost. Relaxed: the count orders nothing else; a place
  // freed on one host may be seen a moment later by another, which refuses one connection
  // it could have taken, as a close noticed a moment later does with one host.
  std::atomic<std::size_t> open_{0};
};

}  // namespace knit_server

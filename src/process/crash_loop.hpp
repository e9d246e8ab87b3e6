// crash_loop: the respawn policy of one process worker, apart from the mechanism. It counts
// the child's crashes in a sliding window; K crashes within T make the worker degraded, and
// a degraded worker's next respawn waits backoff_initial * 2^(crashes in window - K), at
// most backoff_max, counted from the last crash. Without it a task that kills every child
// would keep a CPU busy spawning; with it a crash loop costs one spawn per backoff.
// Degraded ends by itself once fewer than K crashes remain in the window: clears_at() says
// when, and the starter re-evaluates a degraded worker then, calls or no calls.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <deque>

namespace knit::detail {

class crash_loop {
 public:
  using clock = std::chrono::steady_clock;

  crash_loop(unsigned crashes, std::chrono::milliseconds window,
             std::chrono::milliseconds backoff_initial, std::chrono::milliseconds backoff_max)
      : k_(crashes), window_(window), initial_(backoff_initial), max_(backoff_max) {}

  void record_crash(clock::time_point now) {
    times_.push_back(now);
    trim(now);
    // The count only matters up to the point where the backoff reaches its cap: a bound
    // on memory whatever the crash rate.
    while (times_.size() > k_ + 64) times_.pop_front();
  }

  std::size_t crashes_in_window(clock::time_point now) {
    trim(now);
    return times_.size();
  }

  bool degraded(clock::time_point now) { return crashes_in_window(now) >= k_; }

  // When degraded ends if no crash comes first: once the K-th newest crash leaves the
  // window. `now` when not degraded.
  clock::time_point clears_at(clock::time_point now) {
    const std::size_t n = crashes_in_window(now);
    if (k_ == 0 || n < k_) return now;
    return times_[n - k_] + window_;
  }

  // When the next child may start: now (or earlier) unless degraded.
  clock::time_point respawn_at(clock::time_point now) {
    const std::size_t n = crashes_in_window(now);
    if (n < k_) return now;
    const std::size_t doublings = std::min<std::size_t>(n - k_, 30);
    const auto wait = std::min<std::chrono::milliseconds>(initial_ * (1LL << doublings), max_);
    return times_.back() + wait;
  }

 private:
  void trim(clock::time_point now) {
    while (!times_.empty() && now - times_.front() >= window_) times_.pop_front();
  }

  std::size_t k_;
  std::chrono::milliseconds window_;
  std::chrono::milliseconds initial_;
  std::chrono::milliseconds max_;
  std::deque<clock::time_point> times_;
};

}  // namespace knit::detail

// The wall-clock time (system_clock) of a steady_clock reading the caller already took,
// without a second precise read for each.
//
// /ping's body and /plaintext's Date carry the wall-clock time of the request, and the
// session has already read steady_clock for the request's latency. CLOCK_REALTIME and
// CLOCK_MONOTONIC advance together (NTP's frequency and slew adjust both); they part only when
// the wall clock is set (clock_settime, a leap second). So the wall time of a steady reading
// t is wall_s + (t - steady_s) for a pair (steady_s, wall_s) read together, and a pair is
// read again once t is kResync or more away from it: a wall clock that was set shows within
// about a millisecond. Per request that is one precise read (41 ns here) fewer; a pair
// costs three reads (the third checks the gap, below), at most once a millisecond a thread
// when its pair holds (50 requests at 50,000 a second).
// Never early: the pair's steady half is read first, so wall_s is at or after the wall time
// at steady_s, and the result at or after the wall time at t. Late by the time between the
// pair's two reads (~40 ns): a pair whose reads were kMaxPairGap or more apart (the thread
// was preempted between them) is read again, up to kPairTries times.
// Threads: an instance on one thread; wall_time_at() keeps one per thread.
#pragma once

#include <chrono>

namespace knit_server {

class wall_clock_from_steady {
 public:
  using steady = std::chrono::steady_clock;
  using wall = std::chrono::system_clock;
  static constexpr std::chrono::milliseconds kResync{1};
  static constexpr std::chrono::microseconds kMaxPairGap{20};
  static constexpr int kPairTries = 3;

  // The wall-clock time at `t`, a steady_clock reading.
  wall::time_point at(steady::time_point t) noexcept {
    const steady::duration since = t - synced_steady_;
    if (!synced_ || since >= kResync || since <= -kResync) sync();
    return synced_wall_ + std::chrono::duration_cast<wall::duration>(t - synced_steady_);
  }

 private:
  void sync() noexcept {
    for (int i = 0; i < kPairTries; ++i) {
      synced_steady_ = steady::now();  // first: see "Never early" above
      synced_wall_ = wall::now();
      if (steady::now() - synced_steady_ < kMaxPairGap) break;
    }
    synced_ = true;
  }

  bool synced_ = false;
  steady::time_point synced_steady_{};
  wall::time_point synced_wall_{};
};

// at(t) with the calling thread's instance (multi mode: each loop its own).
inline std::chrono::system_clock::time_point wall_time_at(
    std::chrono::steady_clock::time_point t) noexcept {
  thread_local wall_clock_from_steady clock;
  return clock.at(t);
}

}  // namespace knit_server

// Open loop: the schedule arithmetic and the connection pool that follows it.
#include "open_loop.hpp"

#include <algorithm>
#include <cmath>

namespace knit_load {

nanos open_loop_schedule::intended(std::uint64_t i) const {
  // long double keeps i * 1e9 exact far beyond any run length.
  return t0_ + static_cast<nanos>(static_cast<long double>(i) * kNanosPerSecond / rate_);
}

std::uint64_t open_loop_schedule::due_before(nanos t) const {
  if (t <= t0_) return 0;
  // Estimate, then fix up the rounding so the answer agrees exactly with intended().
  auto n = static_cast<std::uint64_t>(
      std::ceil(static_cast<long double>(t - t0_) * rate_ / kNanosPerSecond));
  while (n > 0 && intended(n - 1) >= t) --n;
  while (intended(n) < t) ++n;
  return n;
}

std::uint64_t open_loop_schedule::backlog(nanos t) const {
  const std::uint64_t due = due_before(t);
  return due > next_ ? due - next_ : 0;
}

bool open_loop_rate_met(double target, double achieved, std::uint64_t backlog) {
  return achieved >= 0.99 * target && backlog == 0;
}

void open_loop_driver::on_ready(client_connection& c, nanos now) {
  if (schedule_.due(now)) {
    sink_.send(c, schedule_.take(), now);
  } else {
    idle_.push_back(&c);
  }
}

void open_loop_driver::on_lost(client_connection& c) {
  idle_.erase(std::remove(idle_.begin(), idle_.end(), &c), idle_.end());
}

void open_loop_driver::dispatch(nanos now) {
  while (!idle_.empty() && schedule_.due(now)) {
    client_connection* c = idle_.front();
    idle_.pop_front();
    sink_.send(*c, schedule_.take(), now);
  }
}

}  // namespace knit_load

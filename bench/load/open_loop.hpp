// Open loop: requests follow a fixed schedule, latency counted from when each was due.
#pragma once

#include <cstdint>
#include <deque>

#include "driver.hpp"

namespace knit_load {

// Request i is due at t0 + i / rate. Pure arithmetic, so it is testable on its own.
class open_loop_schedule {
 public:
  open_loop_schedule(double rate, nanos t0) : rate_(rate), t0_(t0) {}

  nanos intended(std::uint64_t i) const;
  nanos next() const { return intended(next_); }
  bool due(nanos now) const { return next() <= now; }
  // Claims the next request and returns its intended send time.
  nanos take() { return intended(next_++); }
  std::uint64_t taken() const { return next_; }
  // How many requests are due strictly before `t`.
  std::uint64_t due_before(nanos t) const;
  // Requests due before `t` that have not been taken.
  std::uint64_t backlog(nanos t) const;
  double rate() const { return rate_; }
  nanos t0() const { return t0_; }

 private:
  double rate_;
  nanos t0_;
  std::uint64_t next_ = 0;
};

// The target counts as met when at least 99% of it was achieved and nothing was left
// waiting for a connection at the end (a backlog means the pool could not keep up).
bool open_loop_rate_met(double target, double achieved, std::uint64_t backlog);

// The route's connections form a pool: a due request goes to a parked (idle) connection;
// with none parked it waits, and its latency keeps counting from the intended time, which
// is what corrects for coordinated omission. No pipelining: one request per connection.
class open_loop_driver final : public route_driver {
 public:
  open_loop_driver(request_sink& sink, double rate) : sink_(sink), schedule_(rate, 0) {}

  void start(nanos t0) override { schedule_ = open_loop_schedule(schedule_.rate(), t0); }
  void on_ready(client_connection& c, nanos now) override;
  void on_lost(client_connection& c) override;
  void dispatch(nanos now) override;
  nanos next_deadline() const override { return idle_.empty() ? kNever : schedule_.next(); }
  // Only requests that waited for want of a connection: with connections idle, a due request
  // is merely one the timer had not woken up for yet when the window closed.
  std::uint64_t backlog(nanos end) const override {
    return idle_.empty() ? schedule_.backlog(end) : 0;
  }

  const open_loop_schedule& schedule() const { return schedule_; }
  std::size_t idle_connections() const { return idle_.size(); }

 private:
  request_sink& sink_;
  open_loop_schedule schedule_;
  // FIFO, so every connection is used in turn and none sits idle long enough for the
  // server's keep-alive timeout to close it under us.
  std::deque<client_connection*> idle_;
};

}  // namespace knit_load

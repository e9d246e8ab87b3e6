// Closed loop: every connection sends its next request as soon as the previous response lands.
#pragma once

#include "driver.hpp"

namespace knit_load {

// Like wrk/oha -c N: offered load adapts to the server, latency is send -> response.
class ClosedLoopDriver final : public RouteDriver {
 public:
  explicit ClosedLoopDriver(RequestSink& sink) : sink_(sink) {}

  void start(Nanos) override {}
  void on_ready(Connection& c, Nanos now) override { sink_.send(c, now, now); }
  void on_lost(Connection&) override {}
  void dispatch(Nanos) override {}
  Nanos next_deadline() const override { return kNever; }
  std::uint64_t backlog(Nanos) const override { return 0; }

 private:
  RequestSink& sink_;
};

}  // namespace knit_load

// Closed loop: every connection sends its next request as soon as the previous response lands.
#pragma once

#include "driver.hpp"

namespace knit_load {

// Like wrk/oha -c N: offered load adapts to the server, latency is send -> response.
class closed_loop_driver final : public route_driver {
 public:
  explicit closed_loop_driver(request_sink& sink) : sink_(sink) {}

  void start(nanos) override {}
  void on_ready(client_connection& c, nanos now) override { sink_.send(c, now, now); }
  void on_lost(client_connection&) override {}
  void dispatch(nanos) override {}
  nanos next_deadline() const override { return kNever; }
  std::uint64_t backlog(nanos) const override { return 0; }

 private:
  request_sink& sink_;
};

}  // namespace knit_load

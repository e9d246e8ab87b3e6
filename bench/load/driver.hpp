// The policy that decides when a route's connections send: the interface both loops implement.
#pragma once

#include <cstdint>

#include "clock.hpp"

namespace knit_load {

class client_connection;

// Where a driver hands a request to go out: the worker, which writes it and accounts for
// a failed write. `intended` is the time the request was meant to leave (latency origin).
class request_sink {
 public:
  virtual void send(client_connection& c, nanos intended, nanos now) = 0;

 protected:
  ~request_sink() = default;
};

class route_driver {
 public:
  virtual ~route_driver() = default;
  // The measured window opens at t0.
  virtual void start(nanos t0) = 0;
  // A connection of this route is connected and idle (fresh, or its response just arrived).
  virtual void on_ready(client_connection& c, nanos now) = 0;
  // A connection of this route is about to be closed; forget it if parked.
  virtual void on_lost(client_connection& c) = 0;
  // Sends whatever has become due; called after every batch of events and timer wake.
  virtual void dispatch(nanos now) = 0;
  // When dispatch() next has work, or kNever; the worker arms its timer for this.
  virtual nanos next_deadline() const = 0;
  // Sends due before `end` that never went out (0 for a closed loop).
  virtual std::uint64_t backlog(nanos end) const = 0;
};

}  // namespace knit_load

// drain_sequence: what the first SIGTERM does before the stop protocol runs: /readyz turns 503 at
// once, everything else is served for KNIT_DRAIN_DELAY_MS, then the stop begins.
//
// Sequence (begin(), on the first SIGINT/SIGTERM; t = the signal):
//   t                    process_status::begin_drain(): /readyz answers 503 "draining"; every
//                        other request is answered as before, keep-alive included, and the
//                        listener still accepts (a load balancer that has not checked yet
//                        still sends traffic, and it is served);
//   t + drain_delay      `stop` runs: the stop protocol (stop_deadline.hpp, server.hpp): the
//                        listener closes, an idle kept-alive connection closes, a request in
//                        progress is answered with Connection: close, a request that arrives
//                        on an open connection from then on gets 503 + Retry-After + close
//                        without reaching a worker; KNIT_STOP_TIMEOUT_MS counts from here.
// So a SIGTERM'd process exits within drain_delay + stop_timeout + 1 s. With drain_delay 0,
// `stop` runs inside begin(): the stop starts at the signal, as before the drain existed.
// A second signal is main's business (it exits at once, during the delay too).
//
// Why a delay and not just the stop: a load balancer learns that an instance is going away
// only from its health checks (every 2 s by default in HAProxy). Closing the listener at the
// signal refuses the connections it still sends meanwhile; serving on for longer than the
// check interval times the checks it needs to mark the instance down (HAProxy: `fall`) lets
// it move the traffic first, and nothing is refused.
#pragma once

#include <chrono>
#include <functional>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "loops/process_status.hpp"

namespace knit_server {

class drain_sequence {
 public:
  // `status` must outlive this object. The timer and `stop` run on `executor` (the stop
  // deadline's: stop_deadline::executor()).
  drain_sequence(const boost::asio::any_io_executor& executor, process_status& status,
                 std::chrono::milliseconds delay);

  drain_sequence(const drain_sequence&) = delete;
  drain_sequence& operator=(const drain_sequence&) = delete;

  // Starts the drain (see above); call on the executor. A second call does nothing.
  void begin(std::function<void()> stop);

  bool begun() const noexcept { return begun_; }

 private:
  process_status& status_;
  std::chrono::milliseconds delay_;
  boost::asio::steady_timer timer_;
  bool begun_ = false;
};

}  // namespace knit_server

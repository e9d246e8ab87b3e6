// The drain: readiness off at once, the stop after the delay (drain_sequence.hpp).
#include "stop/drain_sequence.hpp"

#include <utility>

namespace knit_server {

drain_sequence::drain_sequence(const boost::asio::any_io_executor& executor, process_status& status,
                               std::chrono::milliseconds delay)
    : status_(status), delay_(delay), timer_(executor) {}

void drain_sequence::begin(std::function<void()> stop) {
  if (begun_) return;
  begun_ = true;
  status_.begin_drain();
  if (delay_.count() == 0) return stop();  // today's stop, at the signal
  timer_.expires_after(delay_);
  // The timer is never cancelled: a second signal exits the process, and nothing else ends
  // the delay early.
  timer_.async_wait([stop = std::move(stop)](const boost::system::error_code& ec) {
    if (!ec) stop();
  });
}

}  // namespace knit_server

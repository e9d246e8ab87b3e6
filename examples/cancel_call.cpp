// Cancelling a call: an Asio cancellation slot bound to the completion handler. Emitting
// the signal abandons the call if no worker has started it; it then completes with
// knit::errc::cancelled and the task never runs. (A running call cannot be stopped: it
// finishes and completes normally.)
#include <knit/asio.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

namespace asio = boost::asio;
using boost::system::error_code;

int main() {
  asio::io_context io;
  knit::pool pool;  // one worker
  knit::asio_host host(io, pool);

  // Keep the only worker busy so the next call waits in its queue.
  std::atomic<bool> release{false};
  knit::async_run(
      host,
      [&release](int) {
        while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return 0;
      },
      0, [](error_code, int) {});

  std::atomic<bool> ran{false};
  error_code result;
  asio::cancellation_signal stop;
  knit::async_run(
      host,
      [&ran](int x) {
        ran = true;
        return x;
      },
      7, asio::bind_cancellation_slot(stop.slot(), [&](error_code ec, int) {
        result = ec;
        release = true;  // let the busy worker finish too
      }));
  stop.emit(asio::cancellation_type::terminal);  // e.g. the client went away
  io.run();
  pool.shutdown();  // waits for the worker: `ran` is final after this
  std::printf("queued call: %s; task ran: %s\n", result.message().c_str(), ran ? "yes" : "no");
  return result == knit::errc::cancelled && !ran ? 0 : 1;
}

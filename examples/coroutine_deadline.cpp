// co_await knit::async_run in a coroutine, with a deadline (call_options::timeout).
//
// A call that misses its deadline completes with knit::errc::timed_out: thrown as
// boost::system::system_error under use_awaitable, or returned as a value under
// as_tuple(use_awaitable). The late result is discarded when the worker finishes.
#include <knit/asio.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>

namespace asio = boost::asio;
using namespace std::chrono_literals;

int main() {
  asio::io_context io;
  knit::pool pool;
  knit::asio_host host(io, pool);
  std::atomic<bool> release{false};  // the slow task runs until the coroutine has seen its timeout
  bool ok = false;

  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        // In time: the value, as if it were a local call.
        const int doubled = co_await knit::async_run(
            host, [](int x) { return 2 * x; }, 21, asio::use_awaitable, knit::call_options{1s});
        std::printf("doubled: %d\n", doubled);

        // Too slow: 50 ms deadline on a task that cannot finish before we let it.
        auto slow = [&release](int x) {
          while (!release.load()) std::this_thread::sleep_for(1ms);
          return x;
        };
        auto [ec, value] = co_await knit::async_run(
            host, slow, 1, asio::as_tuple(asio::use_awaitable), knit::call_options{50ms});
        release = true;
        std::printf("slow call: %s (value %d)\n", ec.message().c_str(), value);
        ok = doubled == 42 && ec == knit::errc::timed_out;
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  io.run();
  return ok ? 0 : 1;
}

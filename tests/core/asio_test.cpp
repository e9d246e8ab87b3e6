#include "knit/asio.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;

TEST(asio_host, callback_runs_on_the_io_context_and_run_returns_when_idle) {
  asio::io_context io;
  knit::pool p;
  knit::asio_host host(io, p);
  std::string got;
  std::thread::id handled_on;
  ASSERT_FALSE(host.submit([](std::string s) { return s + "!"; }, std::string("hi"), [&](knit::result<std::string> r) {
    got = r.value();
    handled_on = std::this_thread::get_id();
  }));
  io.run();  // returns once nothing is pending: an idle pool keeps no work on the loop
  EXPECT_EQ(got, "hi!");
  EXPECT_EQ(handled_on, std::this_thread::get_id());
}

TEST(async_run, callback_token_gets_exception_ptr_and_value) {
  asio::io_context io;
  knit::pool p;
  knit::asio_host host(io, p);
  int value = 0;
  bool called = false;
  knit::async_run(host, [](int x) { return x * 3; }, 5, [&](std::exception_ptr e, int v) {
    called = true;
    EXPECT_FALSE(e);
    value = v;
  });
  EXPECT_FALSE(called) << "never inside async_run";
  io.run();
  EXPECT_TRUE(called);
  EXPECT_EQ(value, 15);
}

TEST(async_run, use_future) {
  asio::io_context io;
  knit::pool p;
  knit::asio_host host(io, p);
  std::future<int> f = knit::async_run(host, [](int x) { return x + 1; }, 41, asio::use_future);
  io.run();
  EXPECT_EQ(f.get(), 42);
}

TEST(async_run, use_future_carries_the_task_exception) {
  asio::io_context io;
  knit::pool p;
  knit::asio_host host(io, p);
  std::future<int> f = knit::async_run(host, [](int) -> int { throw std::out_of_range("nope"); }, 0, asio::use_future);
  io.run();
  EXPECT_THROW(f.get(), std::out_of_range);
}

TEST(async_run, use_awaitable) {
  asio::io_context io;
  knit::pool p;
  knit::asio_host host(io, p);
  std::string result;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        std::string a = co_await knit::async_run(host, [](std::string s) { return s + "b"; }, std::string("a"), asio::use_awaitable);
        result = co_await knit::async_run(host, [](std::string s) { return s + "c"; }, std::move(a), asio::use_awaitable);
      },
      asio::detached);
  io.run();
  EXPECT_EQ(result, "abc");
}

TEST(async_run, queue_full_completes_with_the_error_not_inline) {
  asio::io_context io;
  knit::pool_options o;
  o.max_pending = 1;
  knit::pool p(o);
  knit::asio_host host(io, p);
  std::atomic<bool> release{false};
  auto f1 = knit::async_run(host, [&](int) { while (!release) std::this_thread::sleep_for(100us); return 1; }, 0, asio::use_future);
  bool called = false;
  std::error_code ec;
  knit::async_run(host, [](int) { return 2; }, 0, [&](std::exception_ptr e, int) {
    called = true;
    try {
      std::rethrow_exception(e);
    } catch (const std::system_error& se) {
      ec = se.code();
    }
  });
  EXPECT_FALSE(called);
  io.poll();  // runs the posted rejection
  EXPECT_TRUE(called);
  EXPECT_EQ(ec, knit::errc::queue_full);
  release = true;
  io.restart();
  io.run();
  EXPECT_EQ(f1.get(), 1);
}

TEST(async_run, deadline_fires_from_the_timer) {
  asio::io_context io;
  knit::pool p;
  knit::asio_host host(io, p);
  std::atomic<bool> release{false};
  std::error_code ec;
  knit::async_run(
      host, [&](int) { while (!release) std::this_thread::sleep_for(100us); return 1; }, 0,
      [&](std::exception_ptr e, int) {
        try {
          std::rethrow_exception(e);
        } catch (const std::system_error& se) {
          ec = se.code();
        }
        release = true;
      },
      knit::call_options{20ms});
  io.run();  // the only thing that can end it is the deadline timer
  EXPECT_EQ(ec, knit::errc::timed_out);
}

}  // namespace

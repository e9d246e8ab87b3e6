#include "knit/asio_host.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
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
  ASSERT_FALSE(host.submit([](std::string s) { return s + "!"; }, std::string("hi"),
                           [&](knit::result<std::string> r) {
                             got = r.value();
                             handled_on = std::this_thread::get_id();
                           }));
  io.run();  // returns once nothing is pending: an idle pool keeps no work on the loop
  EXPECT_EQ(got, "hi!");
  EXPECT_EQ(handled_on, std::this_thread::get_id());
}

TEST(asio_host, submit_returns_queue_full_without_calling_the_handler) {
  asio::io_context io;
  knit::pool_options o;
  o.max_pending = 1;
  knit::pool p(o);
  knit::asio_host host(io, p);
  std::atomic<bool> release{false};
  int first = 0;
  ASSERT_FALSE(host.submit(
      [&](int) {
        while (!release) std::this_thread::sleep_for(100us);
        return 1;
      },
      0, [&](knit::result<int> r) { first = r.value(); }));
  bool called = false;
  EXPECT_EQ(host.submit([](int x) { return x; }, 0, [&](knit::result<int>) { called = true; }),
            knit::errc::queue_full);
  release = true;
  io.run();
  EXPECT_FALSE(called);
  EXPECT_EQ(first, 1);
}

TEST(asio_host, deadline_fires_from_the_timer) {
  asio::io_context io;
  knit::pool p;
  knit::asio_host host(io, p);
  std::atomic<bool> release{false};
  std::error_code ec;
  ASSERT_FALSE(host.submit(
      [&](int) {
        while (!release) std::this_thread::sleep_for(100us);
        return 1;
      },
      0,
      [&](knit::result<int> r) {
        ec = r.error();
        release = true;
      },
      knit::call_options{20ms}));
  io.run();  // the only thing that can end it is the deadline timer
  EXPECT_EQ(ec, knit::errc::timed_out);
}

}  // namespace

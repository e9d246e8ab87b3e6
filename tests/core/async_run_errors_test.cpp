// async_run's errors: called off the thread that built its asio_host (a thread that is no
// host of the pool, or another asio_host's) it completes with errc::wrong_thread and throws
// nothing; its codes are of a category named "knit" whose values are the knit::errc numbers (not
// "std:unknown" and a hashed address), and knit's std::error_category names and describes each
// value.
//
// No test depends on timing: the rejected call is queued behind a task that spins until the
// test releases it, on a pool with one worker and max_pending 1.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>

#include "knit/async_run.hpp"

namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using boost::system::error_code;

class async_run_errors_test : public ::testing::Test {
 protected:
  static knit::pool_options one_pending() {
    knit::pool_options o;
    o.threads = 1;
    o.max_pending = 1;
    return o;
  }
  // Fills the pool (max_pending 1) with a call that runs until released, then submits one
  // more: it is refused with queue_full, delivered when io runs.
  error_code refused_code() {
    std::atomic<bool> released{false};
    auto first = knit::async_run(
        host,
        [&](int) {
          while (!released.load(std::memory_order_acquire)) std::this_thread::sleep_for(50us);
          return 0;
        },
        0, asio::use_future);
    error_code got;
    knit::async_run(
        host, [](int x) { return x; }, 0, [&](error_code ec, int) { got = ec; });
    io.poll();
    released.store(true, std::memory_order_release);
    io.restart();
    io.run();
    first.get();
    return got;
  }
  asio::io_context io;
  knit::pool pool{one_pending()};
  knit::asio_host host{io, pool};
};

TEST_F(async_run_errors_test, from_a_thread_that_is_no_host_it_completes_with_wrong_thread) {
  std::atomic<bool> ran{false};
  bool called = false;
  error_code got;
  bool threw = false;
  std::thread stranger([&] {
    try {
      knit::async_run(
          host,
          [&](int x) {
            ran = true;
            return x;
          },
          1,
          [&](error_code ec, int) {
            called = true;
            got = ec;
          });
    } catch (...) {
      threw = true;
    }
  });
  stranger.join();
  EXPECT_FALSE(threw);
  EXPECT_FALSE(called);  // posted to the host's io_context, not run on the stranger
  io.run();
  EXPECT_TRUE(called);
  EXPECT_EQ(got, knit::errc::wrong_thread);
  EXPECT_FALSE(ran.load());
  EXPECT_EQ(pool.stats().calls_submitted + pool.stats().calls_rejected, 0u);
}

TEST_F(async_run_errors_test, with_use_future_wrong_thread_is_raised_where_the_result_is_awaited) {
  std::future<int> f;
  std::thread stranger([&] {
    f = knit::async_run(
        host, [](int x) { return x; }, 1, asio::use_future);
  });
  stranger.join();
  io.run();
  try {
    f.get();
    ADD_FAILURE() << "no error";
  } catch (const boost::system::system_error& e) {
    EXPECT_EQ(e.code(), knit::errc::wrong_thread);
  }
}

TEST_F(async_run_errors_test, async_run_result_from_a_stranger_gets_wrong_thread_in_its_result) {
  knit::result<int> got(make_error_code(knit::errc::queue_full));
  std::thread stranger([&] {
    knit::async_run_result(
        host, [](int x) { return x; }, 1, [&](knit::result<int> r) { got = std::move(r); });
  });
  stranger.join();
  io.run();
  EXPECT_EQ(got.error(), knit::errc::wrong_thread);
}

// The other loop's thread is a host of the same pool, so the pool alone would take the
// call: it would be registered with that thread's host and answered on its loop, and a
// cancellation posted to `host` would look its id up among `host`'s own calls.
TEST_F(async_run_errors_test, on_another_asio_hosts_thread_it_completes_with_wrong_thread) {
  std::atomic<bool> ran{false};
  error_code got;
  bool called = false;
  bool submit_threw = false;
  std::thread other_loop([&] {
    asio::io_context other_io;
    knit::asio_host other{other_io, pool};
    knit::async_run(
        host,
        [&](int x) {
          ran = true;
          return x;
        },
        1,
        [&](error_code ec, int) {
          called = true;
          got = ec;
        });
    try {
      (void)host.submit([](int x) { return x; }, 1, [](knit::result<int>) {});
    } catch (const std::logic_error&) {
      submit_threw = true;
    }
    other_io.run();  // nothing of `host`'s may complete here
  });
  other_loop.join();
  EXPECT_FALSE(called);
  // Returns once the completion has run; bounded only so that the misuse this guards
  // against (`host` left waiting for a completion the other host took) fails, not hangs.
  io.run_for(10s);
  EXPECT_TRUE(called);
  EXPECT_EQ(got, knit::errc::wrong_thread);
  EXPECT_TRUE(submit_threw);
  EXPECT_FALSE(ran.load());
  EXPECT_EQ(pool.stats().calls_submitted, 0u);
}

TEST_F(async_run_errors_test, its_codes_are_named_knit_with_the_errc_number_as_value) {
  const error_code ec = refused_code();
  EXPECT_STREQ(ec.category().name(), "knit");
  EXPECT_EQ(ec.value(), 1);  // errc::queue_full, in every run
  EXPECT_EQ(ec.to_string(), "knit:1");
  EXPECT_EQ(ec.category(), knit::boost_error_category());
  EXPECT_EQ(ec.message(), knit::error_category().message(1));
  EXPECT_TRUE(ec.failed());
  EXPECT_TRUE(ec == knit::errc::queue_full);
  EXPECT_TRUE(knit::errc::queue_full == ec);
  EXPECT_TRUE(ec != knit::errc::timed_out);
  // A boost code built from the enum (Boost wraps the std::error_code) compares too.
  EXPECT_TRUE(error_code(knit::errc::queue_full) == knit::errc::queue_full);
  EXPECT_FALSE(error_code(knit::errc::queue_full) == knit::errc::shut_down);
}

TEST(knit_error_category, is_named_knit_and_describes_every_value) {
  const std::error_category& cat = knit::error_category();
  EXPECT_STREQ(cat.name(), "knit");
  EXPECT_EQ(&cat, &std::error_code(knit::errc::stuck).category());
  std::set<std::string> messages;
  for (int v = static_cast<int>(knit::errc::queue_full);
       v <= static_cast<int>(knit::errc::wrong_thread); ++v) {
    const std::string m = cat.message(v);
    EXPECT_EQ(m.rfind("knit: ", 0), 0u) << v;
    EXPECT_EQ(m.find("unknown"), std::string::npos) << v << ": " << m;
    messages.insert(m);
    EXPECT_EQ(knit::boost_error_category().message(v), m);
  }
  EXPECT_EQ(messages.size(), 12u);  // one text per value
  EXPECT_EQ(cat.message(99), "knit: unknown error 99");
}

// The numbers are the interface (a logged "knit:2" must keep meaning timed_out).
TEST(knit_error_category, values_are_stable) {
  EXPECT_EQ(static_cast<int>(knit::errc::queue_full), 1);
  EXPECT_EQ(static_cast<int>(knit::errc::timed_out), 2);
  EXPECT_EQ(static_cast<int>(knit::errc::cancelled), 3);
  EXPECT_EQ(static_cast<int>(knit::errc::shut_down), 4);
  EXPECT_EQ(static_cast<int>(knit::errc::task_failed), 5);
  EXPECT_EQ(static_cast<int>(knit::errc::stuck), 6);
  EXPECT_EQ(static_cast<int>(knit::errc::worker_crashed), 7);
  EXPECT_EQ(static_cast<int>(knit::errc::payload_too_large), 8);
  EXPECT_EQ(static_cast<int>(knit::errc::worker_start_failed), 9);
  EXPECT_EQ(static_cast<int>(knit::errc::sandbox_violation), 10);
  EXPECT_EQ(static_cast<int>(knit::errc::memory_limit), 11);
  EXPECT_EQ(static_cast<int>(knit::errc::wrong_thread), 12);
  const error_code boosted = knit::detail::to_boost_error(knit::errc::timed_out);
  EXPECT_EQ(boosted.to_string(), "knit:2");
}

}  // namespace

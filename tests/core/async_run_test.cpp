// async_run as an Asio asynchronous operation: each completion token, errors as values,
// the associated executor, allocator and cancellation slot.
//
// No test depends on timing: a call that must not start yet is queued behind a "blocker"
// task that spins until the test releases it, on a pool with one worker.
#include "knit/async_run.hpp"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <variant>

namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;
using boost::system::error_code;

// A task that occupies the pool's only worker until release() (or the fixture's end).
struct blocker {
  std::atomic<bool> released{false};
  std::atomic<bool> started{false};
  void release() { released.store(true, std::memory_order_release); }
  auto task() {
    return [this](int) {
      started.store(true, std::memory_order_release);
      while (!released.load(std::memory_order_acquire)) std::this_thread::sleep_for(50us);
      return 0;
    };
  }
};

class async_run_test : public ::testing::Test {
 protected:
  static knit::pool_options one_worker() {
    knit::pool_options o;
    o.threads = 1;
    return o;
  }
  asio::io_context io;
  knit::pool pool{one_worker()};
  knit::asio_host host{io, pool};
};

TEST_F(async_run_test, callback_gets_empty_error_and_value_never_inside_async_run) {
  bool called = false;
  error_code got_ec = knit::errc::cancelled;
  int value = 0;
  knit::async_run(
      host, [](int x) { return x * 3; }, 5,
      [&](error_code ec, int v) {
        called = true;
        got_ec = ec;
        value = v;
      });
  EXPECT_FALSE(called);
  io.run();
  EXPECT_TRUE(called);
  EXPECT_FALSE(got_ec);
  EXPECT_EQ(value, 15);
}

TEST_F(async_run_test, void_task_completes_with_unit) {
  std::atomic<int> ran{0};
  error_code got = knit::errc::cancelled;
  knit::async_run(
      host, [&](int x) { ran = x; }, 7, [&](error_code ec, knit::unit) { got = ec; });
  io.run();
  EXPECT_FALSE(got);
  EXPECT_EQ(ran.load(), 7);
}

TEST_F(async_run_test, use_future_value) {
  std::future<int> f = knit::async_run(
      host, [](int x) { return x + 1; }, 41, asio::use_future);
  io.run();
  EXPECT_EQ(f.get(), 42);
}

TEST_F(async_run_test, use_future_throws_task_failed_when_the_task_throws) {
  std::future<int> f = knit::async_run(
      host, [](int) -> int { throw std::out_of_range("nope"); }, 0, asio::use_future);
  io.run();
  try {
    f.get();
    FAIL() << "expected a system_error";
  } catch (const boost::system::system_error& e) {
    EXPECT_EQ(e.code(), knit::errc::task_failed);
  }
}

TEST_F(async_run_test, async_run_result_delivers_the_task_exception) {
  std::future<knit::result<int>> f = knit::async_run_result(
      host, [](int) -> int { throw std::out_of_range("nope"); }, 0, asio::use_future);
  io.run();
  knit::result<int> r = f.get();
  EXPECT_EQ(r.error(), knit::errc::task_failed);
  ASSERT_TRUE(r.exception());
  EXPECT_THROW(r.value(), std::out_of_range);
}

TEST_F(async_run_test, use_awaitable_chains_calls) {
  std::string result;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        std::string a = co_await knit::async_run(
            host, [](std::string s) { return s + "b"; }, std::string("a"), asio::use_awaitable);
        result = co_await knit::async_run(
            host, [](std::string s) { return s + "c"; }, std::move(a), asio::use_awaitable);
      },
      asio::detached);
  io.run();
  EXPECT_EQ(result, "abc");
}

TEST_F(async_run_test, a_resumed_coroutine_runs_outside_drain_and_may_shut_the_pool_down) {
  bool shut = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await knit::async_run(
            host, [](int x) { return x; }, 1, asio::use_awaitable);
        pool.shutdown();  // not allowed inside a pool handler: async_run must have posted
        shut = !pool.accepting();
      },
      asio::detached);
  io.run();
  EXPECT_TRUE(shut);
}

TEST_F(async_run_test, as_tuple_use_awaitable_gets_the_error_as_a_value) {
  blocker b;
  knit::pool_options o;
  o.max_pending = 1;
  knit::pool small(o);
  knit::asio_host small_host(io, small);
  auto first = knit::async_run(small_host, b.task(), 0, asio::use_future);
  error_code got;
  int value = -1;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        std::tie(got, value) = co_await knit::async_run(
            small_host, [](int x) { return x; }, 5, asio::as_tuple(asio::use_awaitable));
        b.release();
      },
      asio::detached);
  io.run();
  EXPECT_EQ(got, knit::errc::queue_full);
  EXPECT_EQ(value, 0);
  EXPECT_EQ(first.get(), 0);
}

TEST_F(async_run_test, deferred_submits_only_when_launched) {
  std::atomic<int> runs{0};
  auto op = knit::async_run(
      host,
      [&](int x) {
        ++runs;
        return x * 2;
      },
      21, asio::deferred);
  EXPECT_EQ(pool.pending(), 0u) << "a deferred operation must not start before it is launched";
  int value = 0;
  std::move(op)([&](error_code ec, int v) {
    EXPECT_FALSE(ec);
    value = v;
  });
  EXPECT_EQ(pool.pending(), 1u);
  io.run();
  EXPECT_EQ(value, 42);
  EXPECT_EQ(runs.load(), 1);
}

TEST_F(async_run_test, queue_full_is_posted_not_called_inline) {
  blocker b;
  knit::pool_options o;
  o.max_pending = 1;
  knit::pool small(o);
  knit::asio_host small_host(io, small);
  auto first = knit::async_run(small_host, b.task(), 0, asio::use_future);
  bool called = false;
  error_code got;
  knit::async_run(
      small_host, [](int x) { return x; }, 0,
      [&](error_code ec, int) {
        called = true;
        got = ec;
      });
  EXPECT_FALSE(called);
  io.poll();  // runs the posted rejection
  EXPECT_TRUE(called);
  EXPECT_EQ(got, knit::errc::queue_full);
  EXPECT_EQ(got.message(), std::error_code(knit::errc::queue_full).message());
  b.release();
  io.restart();
  io.run();
  EXPECT_EQ(first.get(), 0);
}

TEST_F(async_run_test, deadline_completes_with_timed_out) {
  blocker b;
  error_code got;
  knit::async_run(
      host, b.task(), 0,
      [&](error_code ec, int) {
        got = ec;
        b.release();
      },
      knit::call_options{20ms});
  io.run();  // only the deadline timer can end it: the task runs until the handler releases it
  EXPECT_EQ(got, knit::errc::timed_out);
}

TEST_F(async_run_test, handler_runs_on_its_associated_executor_which_is_kept_busy) {
  asio::io_context other;
  std::thread::id handled_on;
  int value = 0;
  knit::async_run(
      host, [](int x) { return x + 1; }, 1, asio::bind_executor(other, [&](error_code, int v) {
        handled_on = std::this_thread::get_id();
        value = v;
      }));
  // `other` has nothing else to do: only async_run's work guard keeps run() from returning
  // before the handler has been dispatched to it.
  std::thread::id other_thread;
  std::thread t([&] {
    other_thread = std::this_thread::get_id();
    other.run();
  });
  io.run();
  t.join();
  EXPECT_EQ(value, 2);
  EXPECT_EQ(handled_on, other_thread);
}

// Counts the allocations made through it; shared by all rebound copies.
template <class T>
struct counting_allocator {
  using value_type = T;
  std::shared_ptr<std::atomic<int>> count;
  explicit counting_allocator(std::shared_ptr<std::atomic<int>> c) : count(std::move(c)) {}
  template <class U>
  counting_allocator(const counting_allocator<U>& other) : count(other.count) {}
  T* allocate(std::size_t n) {
    ++*count;
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) { std::allocator<T>().deallocate(p, n); }
  template <class U>
  bool operator==(const counting_allocator<U>& other) const noexcept {
    return count == other.count;
  }
};

TEST_F(async_run_test, hand_off_to_another_executor_uses_the_associated_allocator) {
  auto count = std::make_shared<std::atomic<int>>(0);
  asio::io_context other;
  int value = 0;
  knit::async_run(
      host, [](int x) { return x + 1; }, 1,
      asio::bind_allocator(counting_allocator<int>(count),
                           asio::bind_executor(other, [&](error_code, int v) { value = v; })));
  io.run();
  EXPECT_GE(count->load(), 1)
      << "posting the completion to `other` must allocate through the handler's allocator";
  other.run();
  EXPECT_EQ(value, 2);
}

TEST_F(async_run_test, cancellation_abandons_a_call_that_has_not_started) {
  blocker b;
  auto first = knit::async_run(host, b.task(), 0, asio::use_future);
  asio::cancellation_signal signal;
  std::atomic<bool> ran{false};
  bool called = false;
  error_code got;
  knit::async_run(
      host,
      [&](int) {
        ran = true;
        return 1;
      },
      0, asio::bind_cancellation_slot(signal.slot(), [&](error_code ec, int) {
        called = true;
        got = ec;
      }));
  signal.emit(asio::cancellation_type::terminal);
  EXPECT_FALSE(called) << "the completion is posted, never run inside emit()";
  io.poll();
  EXPECT_TRUE(called);
  EXPECT_EQ(got, knit::errc::cancelled);
  EXPECT_FALSE(signal.slot().has_handler()) << "the slot is cleared when the operation completes";
  b.release();
  io.restart();
  io.run();
  EXPECT_EQ(first.get(), 0);
  pool.shutdown();
  EXPECT_FALSE(ran.load()) << "a cancelled call never runs";
}

TEST_F(async_run_test, cancellation_emitted_on_another_thread_reaches_the_pool_through_the_host) {
  blocker b;
  auto first = knit::async_run(host, b.task(), 0, asio::use_future);
  asio::io_context other;  // the handler's executor, run by another thread
  asio::cancellation_signal signal;
  std::atomic<bool> ran{false};
  error_code got;
  std::thread::id handled_on;
  knit::async_run(
      host,
      [&](int) {
        ran = true;
        return 1;
      },
      0,
      asio::bind_cancellation_slot(signal.slot(),
                                   asio::bind_executor(other, [&](error_code ec, int) {
                                     got = ec;
                                     handled_on = std::this_thread::get_id();
                                     b.release();
                                   })));
  // A slot is emitted on its handler's executor; pool::cancel there would be off the host
  // thread (std::logic_error), so the request must travel to the host's io_context.
  asio::post(other, [&] { signal.emit(asio::cancellation_type::terminal); });
  std::thread::id other_thread;
  std::thread t([&] {
    other_thread = std::this_thread::get_id();
    other.run();  // kept busy by async_run's work guard until the handler has run
  });
  io.run();
  t.join();
  EXPECT_EQ(got, knit::errc::cancelled);
  EXPECT_EQ(handled_on, other_thread);
  EXPECT_EQ(first.get(), 0);
  pool.shutdown();
  EXPECT_FALSE(ran.load());
}

TEST_F(async_run_test, cancellation_of_a_running_call_is_ignored_and_it_completes) {
  blocker b;
  asio::cancellation_signal signal;
  error_code got = knit::errc::cancelled;
  int value = -1;
  knit::async_run(host, b.task(), 0,
                  asio::bind_cancellation_slot(signal.slot(), [&](error_code ec, int v) {
                    got = ec;
                    value = v;
                  }));
  while (!b.started.load(std::memory_order_acquire)) std::this_thread::yield();
  signal.emit(asio::cancellation_type::total);
  b.release();
  io.run();
  EXPECT_FALSE(got);
  EXPECT_EQ(value, 0);
}

TEST_F(async_run_test, awaitable_or_timer_cancels_the_queued_call_when_the_timer_wins) {
  using namespace asio::experimental::awaitable_operators;
  blocker b;
  auto first = knit::async_run(host, b.task(), 0, asio::use_future);
  std::atomic<bool> ran{false};
  std::size_t winner = 99;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        asio::steady_timer timer(io, 1ms);
        auto r = co_await (knit::async_run(
                               host,
                               [&](int) {
                                 ran = true;
                                 return 1;
                               },
                               0, asio::use_awaitable) ||
                           timer.async_wait(asio::use_awaitable));
        winner = r.index();
        b.release();  // only now may the worker move on: the queued call cannot have started
      },
      asio::detached);
  io.run();
  EXPECT_EQ(winner, 1u);
  EXPECT_EQ(first.get(), 0);
  pool.shutdown();
  EXPECT_FALSE(ran.load()) << "the losing call was cancelled before it started";
}

TEST_F(async_run_test, awaitable_or_timer_returns_the_value_when_the_call_wins) {
  using namespace asio::experimental::awaitable_operators;
  std::variant<int, std::monostate> r;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        asio::steady_timer timer(io, 1h);  // cancelled by `||` once the call completes
        r = co_await (knit::async_run(
                          host, [](int x) { return x * 2; }, 4, asio::use_awaitable) ||
                      timer.async_wait(asio::use_awaitable));
      },
      asio::detached);
  io.run();
  ASSERT_EQ(r.index(), 0u);
  EXPECT_EQ(std::get<0>(r), 8);
}

}  // namespace

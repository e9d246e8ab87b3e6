// knit::asio_host with its completion watch handed to the caller's loop
// (hand_over_completion_watch): Asio no longer waits on the descriptor, the loop polls it
// and calls completions_ready(). What that must keep: every result delivered when the loop
// reports the descriptor, none run before; a wake reported from inside a drain drained again
// when it returns; under a watch that fires on every write, no read of the eventfd; misuse
// refused loudly.
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <thread>

#include "knit/asio_host.hpp"
#include "support/round_trip_chain.hpp"

namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;

knit::pool_options workers(int n) {
  knit::pool_options o;
  o.threads = n;
  return o;
}

// Whether the fd turns readable within `limit` (without reading it).
bool readable_within(int fd, std::chrono::milliseconds limit) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(limit.count())) == 1 && (p.revents & POLLIN);
}

// The caller's loop: Asio's handlers, then a wait on the handed descriptor, until `done`.
void run_loop(asio::io_context& io, knit::asio_host& host, int fd,
              const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < until) {
    io.poll();
    if (readable_within(fd, 10ms)) host.completions_ready();
  }
}

TEST(asio_host_handed_watch, the_loop_reports_the_descriptor_and_every_round_trip_arrives) {
  asio::io_context io;
  knit::pool p(workers(1));
  knit::asio_host host(io, p);
  const int fd = host.hand_over_completion_watch(knit::completion_watch::readiness);
  ASSERT_GE(fd, 0);
  constexpr int kRounds = 2000;
  knit_test::round_trip_chain chain(host, kRounds);
  chain.start();
  run_loop(
      io, host, fd, [&] { return chain.finished(); }, 20s);
  EXPECT_EQ(chain.done(), kRounds);
}

// Handed over, Asio keeps no wait on the descriptor: a result waits, readable, until the loop
// reports it (an Asio wait still armed would run the handler inside io.run_for).
TEST(asio_host_handed_watch, asio_runs_no_result_the_loop_has_not_reported) {
  asio::io_context io;
  knit::pool p(workers(1));
  knit::asio_host host(io, p);
  const int fd = host.hand_over_completion_watch(knit::completion_watch::readiness);
  bool ran = false;
  ASSERT_FALSE(host.submit([](int x) { return x; }, 7,
                           [&ran](knit::result<int> r) { ran = r.ok() && r.value() == 7; }));
  ASSERT_TRUE(readable_within(fd, 10s));
  auto guard = asio::make_work_guard(io);
  io.run_for(50ms);
  EXPECT_FALSE(ran);
  host.completions_ready();
  EXPECT_TRUE(ran);
  EXPECT_FALSE(readable_within(fd, 0ms));  // the drain read it
}

// A result that lands while a handler of the drain runs, reported from inside it (the
// handler ran the caller's loop): ignored there, drained again when the outer drain returns.
// Without that second round it would wait for a wake that already came.
TEST(asio_host_handed_watch, a_wake_reported_inside_a_drain_is_drained_when_it_returns) {
  asio::io_context io;
  knit::pool p(workers(2));
  knit::asio_host host(io, p);
  const int fd = host.hand_over_completion_watch(knit::completion_watch::readiness);
  std::atomic<bool> release_second{false};
  bool second_ran = false;
  bool second_ran_inside = true;
  ASSERT_FALSE(host.submit([](int x) { return x; }, 1,
                           [&](knit::result<int>) {
                             // The second call finishes now, and its wake is reported while this
                             // drain runs.
                             release_second = true;
                             ASSERT_TRUE(readable_within(fd, 10s));
                             host.completions_ready();
                             second_ran_inside = second_ran;
                           }));
  ASSERT_FALSE(host.submit(
      [&release_second](int x) {
        while (!release_second.load()) std::this_thread::sleep_for(1ms);
        return x;
      },
      2, [&second_ran](knit::result<int> r) { second_ran = r.ok(); }));
  ASSERT_TRUE(readable_within(fd, 10s));  // the first result
  host.completions_ready();
  EXPECT_FALSE(second_ran_inside);  // a nested drain delivers nothing
  EXPECT_TRUE(second_ran);
}

// completion_watch::each_write: a watch that fires on every write (epoll with EPOLLET here;
// the server's io_uring multishot poll alike), the drain never reads the eventfd. Every round
// trip still arrives, each woken by its own write to a counter never reset, and the
// descriptor is left readable: the read (one system call per wake) is gone. With the drain
// reading it (doorbell_reset::no_read made to read, tried once) the last check fails.
TEST(asio_host_handed_watch, a_watch_that_fires_on_every_write_leaves_the_eventfd_unread) {
  asio::io_context io;
  knit::pool p(workers(1));
  knit::asio_host host(io, p);
  const int fd = host.hand_over_completion_watch(knit::completion_watch::each_write);
  const int edges = ::epoll_create1(EPOLL_CLOEXEC);
  ASSERT_GE(edges, 0);
  epoll_event watch{};
  watch.events = EPOLLIN | EPOLLET;
  ASSERT_EQ(::epoll_ctl(edges, EPOLL_CTL_ADD, fd, &watch), 0);
  constexpr int kRounds = 2000;
  knit_test::round_trip_chain chain(host, kRounds);
  chain.start();
  // Woken only by the watch (a 5 s silence with a call out fails the test, never a poll
  // standing in for a wake).
  bool silent = false;
  while (!chain.finished() && !silent) {
    io.poll();
    epoll_event fired{};
    silent = ::epoll_wait(edges, &fired, 1, 5000) != 1;
    if (!silent) host.completions_ready();
  }
  ::close(edges);
  EXPECT_FALSE(silent) << "no wake after " << chain.done() << " round trips";
  EXPECT_EQ(chain.done(), kRounds);
  EXPECT_TRUE(readable_within(fd, 0ms)) << "the drain read the eventfd";
}

TEST(asio_host_handed_watch, handing_over_after_a_submit_twice_or_off_its_thread_throws) {
  asio::io_context io;
  knit::pool p(workers(1));
  {
    knit::asio_host host(io, p);
    std::thread([&host] {
      EXPECT_THROW(host.hand_over_completion_watch(knit::completion_watch::readiness),
                   std::logic_error);
    }).join();
    EXPECT_GE(host.hand_over_completion_watch(knit::completion_watch::readiness), 0);
    EXPECT_THROW(host.hand_over_completion_watch(knit::completion_watch::readiness),
                 std::logic_error);
  }
  knit::asio_host host(io, p);
  ASSERT_FALSE(host.submit([](int x) { return x; }, 1, [](knit::result<int>) {}));
  EXPECT_THROW(host.hand_over_completion_watch(knit::completion_watch::readiness),
               std::logic_error);
  io.run_for(10s);  // Asio's own wait delivers it; run returns once nothing is pending
}

}  // namespace

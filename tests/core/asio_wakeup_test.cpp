// knit::asio_host's wake-ups: it waits on the pool's completion eventfd through Asio's
// reactor (registered edge-triggered, re-armed at each wait) and on one timer. What they
// must not lose or repeat: a round trip after a round trip (each result a new edge), a
// count left on the eventfd while no wait was armed, and a wake-up that fires inside a
// drain because a handler ran the io_context (poll_one): left to the enclosing drain, not
// re-armed on a fd that is still readable (which would fire again without end).
#include <poll.h>
#include <sys/eventfd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "knit/asio_host.hpp"
#include "support/round_trip_chain.hpp"

namespace {

using namespace std::chrono_literals;
namespace asio = boost::asio;

knit::pool_options one_worker() {
  knit::pool_options o;
  o.threads = 1;
  return o;
}

// Whether the fd turns readable within `limit` (without reading it).
bool readable_within(int fd, std::chrono::milliseconds limit) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(limit.count())) == 1 && (p.revents & POLLIN);
}

TEST(asio_host_wakeups, the_loop_reads_the_eventfd_and_every_round_trip_arrives) {
  asio::io_context io;
  knit::pool p(one_worker());
  knit::asio_host host(io, p);
  // One call at a time: each result is the only one in its round, so each needs its own
  // edge on the eventfd and its own read. A lost one stops the chain (run_for ends it).
  constexpr int kRounds = 3000;
  knit_test::round_trip_chain chain(host, kRounds);
  chain.start();
  io.run_for(20s);
  EXPECT_EQ(chain.done(), kRounds);
}

TEST(asio_host_wakeups, a_count_left_on_the_eventfd_while_no_read_is_armed_costs_nothing) {
  asio::io_context io;
  knit::pool p(one_worker());
  knit::asio_host host(io, p);
  for (int round = 0; round < 3; ++round) {
    // Nothing pending, no read armed: a write the reactor reports to nobody (its edge is
    // spent) must not hide the next result's edge.
    ASSERT_EQ(::eventfd_write(p.completion_fd(), 1), 0);
    int got = 0;
    ASSERT_FALSE(host.submit([](int x) { return x * 2; }, 21,
                             [&](knit::result<int> r) { got = r.value(); }));
    io.restart();
    io.run_for(10s);
    ASSERT_EQ(got, 42) << "round " << round;
  }
}

TEST(asio_host_wakeups, a_loop_run_inside_a_handler_returns_and_loses_no_result) {
  asio::io_context io;
  knit::pool p(one_worker());
  knit::asio_host host(io, p);
  const int fd = p.completion_fd();
  bool second = false;
  int nested_handlers = 0;
  ASSERT_FALSE(host.submit([](int x) { return x; }, 1,
                           [&](knit::result<int> r) {
                             ASSERT_TRUE(r.ok());
                             // Inside the drain that delivers the first result: the second result
                             // rings the eventfd, and the loop run here sees the fd readable. Its
                             // drain would be nested (returns 0, reads nothing): a wait re-armed
                             // after it fires again at once, without end.
                             ASSERT_FALSE(host.submit([](int x) { return x; }, 2,
                                                      [&](knit::result<int>) { second = true; }));
                             ASSERT_TRUE(readable_within(fd, 10s));
                             while (nested_handlers < 100 && io.poll_one() > 0) ++nested_handlers;
                           }));
  io.run_for(10s);
  EXPECT_LT(nested_handlers, 100) << "the nested loop kept finding the same wake-up";
  ASSERT_TRUE(second);
  EXPECT_TRUE(io.stopped());  // out of work, not out of time
  // And the doorbell still works: the next result arrives.
  int third = 0;
  ASSERT_FALSE(
      host.submit([](int x) { return x; }, 3, [&](knit::result<int> r) { third = r.value(); }));
  io.restart();
  io.run_for(10s);
  EXPECT_EQ(third, 3);
}

}  // namespace

// A host with process workers whose loop watches completion_fd() (the process ring's epoll
// set) with a watch that fires on every write (EPOLLET here; the server's io_uring loop
// polls it multishot) and drains with knit::completion_watch::each_write, which never reads
// the doorbell. What that must keep: every thread call (woken by the doorbell) and every
// process call (woken by its child's answer eventfd) delivered, woken only by the watch,
// before the ring has a child and after; and, the doorbell being in the set edge-triggered,
// its unread counter reported once per write, so the set turns quiet once the drains have
// taken every write (held level-triggered, tried once, it stays readable: the last check
// fails). And pool::poll beside a readiness wait, whose step takes the doorbell's edge
// without a reset: it puts the edge back.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>

#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/process_helpers.hpp"

namespace {

using namespace std::chrono_literals;

class each_write_watch : public ::testing::Test {
 protected:
  void SetUp() override {
    edges_ = ::epoll_create1(EPOLL_CLOEXEC);
    ASSERT_GE(edges_, 0);
    epoll_event watch{};
    watch.events = EPOLLIN | EPOLLET;
    ASSERT_EQ(::epoll_ctl(edges_, EPOLL_CTL_ADD, pool_.completion_fd(), &watch), 0);
  }
  void TearDown() override { ::close(edges_); }

  // Waits on the watch (5 s of silence with calls out fails: no poll timeout stands in for
  // a wake) and drains, until `done()`.
  bool drain_until(const std::function<bool()>& done) {
    while (!done()) {
      epoll_event fired{};
      if (::epoll_wait(edges_, &fired, 1, 5000) != 1) return false;
      pool_.drain(knit::completion_watch::each_write);
    }
    return true;
  }

  knit::pool pool_{knit_test::threads(1)};
  int edges_ = -1;
};

// Thread calls only: the ring has no child, so its step looks at nothing and says the
// doorbell rang; the drain under each_write still leaves it unread, and the set readable.
// (The ring's path made to read when the step says so, tried once: the last check fails.)
TEST_F(each_write_watch, before_any_child_the_doorbell_is_left_unread) {
  constexpr int kCalls = 200;
  int done = 0;
  std::function<void()> next = [&] {
    ASSERT_FALSE(pool_.submit([](int x) { return x; }, done,
                              [&](knit::result<int> r) {
                                ASSERT_TRUE(r.ok());
                                if (++done < kCalls) next();
                              }));
  };
  next();
  ASSERT_TRUE(drain_until([&] { return done == kCalls; })) << "no wake after " << done;
  pollfd set{pool_.completion_fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&set, 1, 0), 1) << "the drain read the doorbell";
}

TEST_F(each_write_watch, thread_and_process_calls_arrive_and_the_set_turns_quiet) {
  // Thread calls first (no child yet: the ring's step makes no epoll_wait), then thread
  // and process calls in turn; each handler submits the next call.
  constexpr int kThreadOnly = 50;
  constexpr int kCalls = 250;
  const auto before = knit::current_process_stats();
  int done = 0;
  std::string failure;
  std::function<void()> next = [&] {
    const int i = done;
    if (i < kThreadOnly || i % 2 == 0) {
      auto ec = pool_.submit([](int x) { return x; }, i,
                             [&, i](knit::result<int> r) {
                               if (!r.ok() || r.value() != i)
                                 failure = "thread call " + std::to_string(i);
                               if (++done < kCalls) next();
                             });
      if (ec) failure = "refused thread call " + std::to_string(i);
    } else {
      auto ec = knit::submit_process(pool_, "echo", std::to_string(i),
                                     [&, i](knit::result<std::string> r) {
                                       if (!r.ok() || r.value() != std::to_string(i)) {
                                         failure = "process call " + std::to_string(i);
                                       }
                                       if (++done < kCalls) next();
                                     });
      if (ec) failure = "refused process call " + std::to_string(i);
    }
  };
  next();
  ASSERT_TRUE(drain_until([&] { return done == kCalls || !failure.empty(); }))
      << "no wake after " << done << " calls";
  EXPECT_EQ(failure, "");
  EXPECT_EQ(done, kCalls);
  EXPECT_EQ(knit::current_process_stats().calls - before.calls, (kCalls - kThreadOnly) / 2u);
  // A write may still come after the drain that took its call (a worker's or a child's
  // write follows its result): drained like any other, after which none is left.
  bool quiet = false;
  const auto limit = std::chrono::steady_clock::now() + 5s;
  while (!quiet && std::chrono::steady_clock::now() < limit) {
    pollfd set{pool_.completion_fd(), POLLIN, 0};
    quiet = ::poll(&set, 1, 0) == 0;
    if (!quiet) {
      epoll_event fired{};
      ::epoll_wait(edges_, &fired, 1, 100);
      pool_.drain(knit::completion_watch::each_write);
    }
  }
  EXPECT_TRUE(quiet) << "the ring's set stays readable: the doorbell is reported at every step";
}

// poll() beside a readiness wait (a spin-then-block loop) with a child up: the ring's step
// takes the doorbell's edge out of the set, and poll() resets nothing, so the workers, still
// signalled, write no more. The step puts the edge back: the next wait on completion_fd()
// finds it readable, and its drain reads it. Without that (tried once), the wait below
// sleeps its 5 s and the second call is never reported.
TEST(poll_beside_a_readiness_wait, leaves_completion_fd_readable_after_taking_the_doorbell) {
  knit::pool pool(knit_test::threads(1));
  ASSERT_TRUE(knit_test::run_one(pool, "echo", "child up").ok());  // the step now waits on the set
  int done = 0;
  auto count = [&done](knit::result<int> r) { done += r.ok() ? 1 : 0; };
  ASSERT_FALSE(pool.submit([](int x) { return x; }, 1, count));
  pollfd fd{pool.completion_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&fd, 1, 5000), 1);  // the first result's write is in the set, not taken
  while (done < 1) pool.poll();        // its step takes the edge; the result is delivered
  ASSERT_FALSE(pool.submit([](int x) { return x; }, 2, count));
  // The loop from here: wait on the fd, drain. The first wait may find the first write
  // still there (put back, unread) and its drain nothing yet; the drain then resets the
  // doorbell, and the second result's write wakes the next wait.
  while (done < 2) {
    fd.revents = 0;
    ASSERT_EQ(::poll(&fd, 1, 5000), 1) << "completion_fd silent with a result waiting";
    pool.drain();
  }
}

}  // namespace

// A host with process workers whose loop watches completion_fd() (the process ring's epoll
// set) with a watch that fires on every write (EPOLLET here; the server's io_uring loop
// polls it multishot) and drains with knit::completion_watch::each_write, which never reads
// the doorbell. What that must keep: every thread call (woken by the doorbell) and every
// process call (woken by its child's answer eventfd) delivered, woken only by the watch,
// before the ring has a child and after; and, the doorbell being in the set edge-triggered,
// its unread counter reported once per write, so the set turns quiet once the drains have
// taken every write (held level-triggered, tried once, it stays readable: the last check
// fails).
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

}  // namespace

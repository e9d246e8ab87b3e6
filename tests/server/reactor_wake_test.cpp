// reactor_wake (server/loops/reactor_wake.hpp): a loop that polls Asio once per turn and blocks
// on the reactor's descriptor is woken by another thread's post only after arm_reactor_wake.
// Each interleaving the arm guards is forced here; the stress test would hang (and fails after
// its timeout) on a lost wake.
#include "loops/reactor_wake.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

namespace {

namespace net = boost::asio;
using knit_server::arm_reactor_wake;
using knit_server::reactor_fd;

// Whether `fd` becomes readable within `ms` (poll(2), level-triggered: an epoll descriptor is
// readable while its ready list is not empty).
bool readable_within(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1 && (p.revents & POLLIN) != 0;
}

// Posts `fn` to io from a thread of its own, and returns once the post is done.
template <class Fn>
void post_from_another_thread(net::io_context& io, Fn fn) {
  std::thread([&io, fn] { net::post(io, fn); }).join();
}

class ReactorWake : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!knit_server::kReactorWakeActive) GTEST_SKIP() << "not this Asio (Boost 1.81, epoll)";
    fd_ = reactor_fd(io_);
    ASSERT_GE(fd_, 0);
    io_.poll();  // the reactor's first turn: nothing is ready
  }

  // After a test has emptied epoll's list: an arm, a post from another thread that wakes the
  // descriptor, and `poll` runs it (nothing left linked there hides the interrupter's wake).
  template <class Poll>
  void expect_an_armed_loop_woken_by_a_foreign_post(Poll poll) {
    ASSERT_TRUE(arm_reactor_wake(io_));
    bool posted_ran = false;
    post_from_another_thread(io_, [&posted_ran] { posted_ran = true; });
    EXPECT_TRUE(readable_within(fd_, 2000));
    poll();
    EXPECT_TRUE(posted_ran);
  }

  net::io_context io_{1};  // one loop thread, as each knit-server loop
  // A loop with nothing to do would stop at its first poll(); a server's loop is kept running
  // the same way until its stop.
  net::executor_work_guard<net::io_context::executor_type> keep_running_{io_.get_executor()};
  int fd_ = -1;
};

// Fact 2, as it is in this Asio: without the arm, another thread's post leaves the descriptor
// quiet, and a loop blocked on it would wait for something else.
TEST_F(ReactorWake, AForeignPostAfterPollDoesNotWakeTheReactorByItself) {
  bool ran = false;
  post_from_another_thread(io_, [&ran] { ran = true; });
  EXPECT_FALSE(readable_within(fd_, 100));
  io_.poll();
  EXPECT_TRUE(ran);
}

// Armed with nothing ready, the next post from another thread makes the descriptor readable
// (removing the flag's reset in arm_reactor_wake fails this), and the next poll runs it and
// leaves the descriptor quiet again.
TEST_F(ReactorWake, AnArmedLoopIsWokenByAForeignPost) {
  ASSERT_TRUE(arm_reactor_wake(io_));
  EXPECT_FALSE(readable_within(fd_, 0));
  bool ran = false;
  post_from_another_thread(io_, [&ran] { ran = true; });
  EXPECT_TRUE(readable_within(fd_, 2000));
  io_.poll();
  EXPECT_TRUE(ran);
  EXPECT_FALSE(readable_within(fd_, 0));
}

// A post that lands between poll() and the arm interrupted nothing (the flag was still set):
// the arm must refuse, so the loop polls again instead of blocking on a quiet descriptor
// (removing the queue check fails this).
TEST_F(ReactorWake, APostBetweenPollAndArmMakesTheArmRefuse) {
  bool ran = false;
  post_from_another_thread(io_, [&ran] { ran = true; });
  EXPECT_FALSE(arm_reactor_wake(io_));
  io_.poll();
  EXPECT_TRUE(ran);
  EXPECT_TRUE(arm_reactor_wake(io_));
}

// A post from the loop's own thread while it polls runs in that poll: the arm after it finds
// nothing queued.
TEST_F(ReactorWake, APostFromTheLoopItselfRunsInTheSamePoll) {
  int runs = 0;
  net::post(io_, [this, &runs] {
    ++runs;
    net::post(io_, [&runs] { ++runs; });
  });
  io_.poll();
  EXPECT_EQ(runs, 2);
  EXPECT_TRUE(arm_reactor_wake(io_));
}

// Fact 3, as it is in this Asio: a poll() nested in a handler of run() runs what that handler
// posted, counts it as finished work without having counted it as started, and the io_context
// stops although a work guard holds it.
TEST_F(ReactorWake, APollNestedInAHandlerStopsTheLoopOnWhatTheHandlerPosted) {
  bool stopped_inside = false;
  net::post(io_, [this, &stopped_inside] {
    // On this thread's private queue, counted there: two, against the two units the
    // scheduler counts (the guard's, and this handler's own).
    net::post(io_, [] {});
    net::post(io_, [] {});
    io_.poll();
    stopped_inside = io_.stopped();
  });
  io_.run_one();
  EXPECT_TRUE(stopped_inside);
}

// poll_inside_handler moves the count with the operations: the loop keeps running, every turn
// (as io_ring's turns, which post from their completions and poll again).
TEST_F(ReactorWake, PollInsideAHandlerKeepsCountOfWhatTheHandlerPosted) {
  int ran = 0;
  bool stopped_inside = false;
  net::post(io_, [this, &ran, &stopped_inside] {
    for (int turn = 0; turn < 100; ++turn) {
      net::post(io_, [&ran] { ++ran; });
      net::post(io_, [this, &ran] { net::post(io_, [&ran] { ++ran; }); });
      knit_server::poll_inside_handler(io_);
      if (io_.stopped()) break;
    }
    stopped_inside = io_.stopped();
  });
  io_.run_one();
  EXPECT_FALSE(stopped_inside);
  EXPECT_EQ(ran, 200);
  // What the guard holds is all that is left: the loop waits for it, as before.
  EXPECT_FALSE(io_.stopped());
  EXPECT_TRUE(arm_reactor_wake(io_));
  keep_running_.reset();
  EXPECT_EQ(io_.poll(), 0u);
  EXPECT_TRUE(io_.stopped());
}

// io_context::stop() from another thread wakes an armed loop too.
TEST_F(ReactorWake, AnArmedLoopIsWokenByAStop) {
  ASSERT_TRUE(arm_reactor_wake(io_));
  std::thread([this] { io_.stop(); }).join();
  EXPECT_TRUE(readable_within(fd_, 2000));
  EXPECT_TRUE(io_.stopped());
}

// A stop that lands between the loop's last look at stopped() and the arm interrupted nothing
// (the flag was still set): the arm must refuse, so the loop looks again and leaves instead
// of blocking on a descriptor nothing will wake (removing the stopped check fails this; it
// was a knit-server whose stop never ended, seen once in CI under ASan).
TEST_F(ReactorWake, AStopBetweenPollAndArmMakesTheArmRefuse) {
  ASSERT_FALSE(io_.stopped());
  std::thread([this] { io_.stop(); }).join();
  EXPECT_FALSE(arm_reactor_wake(io_));
  EXPECT_FALSE(readable_within(fd_, 0));  // the stop woke nothing: only the refusal saves it
  EXPECT_TRUE(io_.stopped());
}

// A timer's expiry makes the descriptor readable with no arm (its timerfd is in the set).
TEST_F(ReactorWake, ATimerWakesTheLoopWithoutAnArm) {
  net::steady_timer timer(io_, std::chrono::milliseconds(20));
  bool fired = false;
  timer.async_wait([&fired](boost::system::error_code ec) { fired = !ec; });
  io_.poll();
  ASSERT_FALSE(fired);
  EXPECT_TRUE(readable_within(fd_, 2000));
  io_.poll();
  EXPECT_TRUE(fired);
}

// More descriptors ready than one epoll_wait hands back (Asio asks for 128 events): poll()
// runs the reactor again each time its task comes back to the front of the queue, until a
// run finds nothing, so one poll() empties epoll's ready list. Nothing is left linked there
// (Asio's interrupter included), and an arm after it is woken by a foreign post as on a quiet
// loop. A poll() that ran the reactor only once would leave 172 waits unrun here, and the
// interrupter's EPOLL_CTL_MOD would wake no one while it stayed on the list.
TEST_F(ReactorWake, OnePollEmptiesAReadyListLongerThanOneEpollWait) {
  constexpr int kDescriptors = 300;
  std::vector<net::posix::stream_descriptor> descriptors;
  descriptors.reserve(kDescriptors);
  int ran = 0;
  for (int i = 0; i < kDescriptors; ++i) {
    const int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ASSERT_GE(fd, 0);
    descriptors.emplace_back(io_, fd);
    descriptors.back().async_wait(net::posix::stream_descriptor::wait_read,
                                  [&ran](boost::system::error_code ec) { ran += ec ? 0 : 1; });
  }
  io_.poll();  // registers the waits; none is ready
  ASSERT_EQ(ran, 0);
  for (auto& d : descriptors) {
    const std::uint64_t one = 1;
    ASSERT_EQ(::write(d.native_handle(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
  }
  ASSERT_TRUE(readable_within(fd_, 0));
  io_.poll();
  EXPECT_EQ(ran, kDescriptors);
  EXPECT_FALSE(readable_within(fd_, 0)) << "entries left on epoll's ready list";
  expect_an_armed_loop_woken_by_a_foreign_post([this] { io_.poll(); });
}

// Makes `count` eventfds readable, each with an Asio wait on it that counts into `ran`;
// returns once the reactor's descriptor reports them (none of the waits has run yet).
std::vector<net::posix::stream_descriptor> ready_waits(net::io_context& io, int reactor, int count,
                                                       int& ran) {
  std::vector<net::posix::stream_descriptor> waits;
  waits.reserve(count);
  for (int i = 0; i < count; ++i) {
    waits.emplace_back(io, ::eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC));
    waits.back().async_wait(net::posix::stream_descriptor::wait_read,
                            [&ran](boost::system::error_code ec) { ran += ec ? 0 : 1; });
  }
  EXPECT_TRUE(readable_within(reactor, 2000));
  return waits;
}

// Fact 4: poll_queued_inside_handler runs what is queued and not the reactor: a ready
// descriptor waits for the next full poll (taking the reactor's task out is what keeps
// poll() from running it: without that, the wait runs here).
TEST_F(ReactorWake, PollQueuedRunsPostsButNotTheReactor) {
  int waits_ran = 0;
  auto waits = ready_waits(io_, fd_, 1, waits_ran);
  bool posted_ran = false;
  net::post(io_, [&posted_ran] { posted_ran = true; });
  knit_server::poll_queued_inside_handler(io_);
  EXPECT_TRUE(posted_ran);
  EXPECT_EQ(waits_ran, 0);
  EXPECT_TRUE(readable_within(fd_, 0));  // still on epoll's list: no epoll_wait took it
  EXPECT_TRUE(arm_reactor_wake(io_));    // the task is back, alone in the queue
  io_.poll();
  EXPECT_EQ(waits_ran, 1);
}

// A handler that throws out of poll_queued_inside_handler leaves the reactor's task queued
// again: the next poll runs the reactor (without the put-back on the way out, it never would).
TEST_F(ReactorWake, PollQueuedPutsTheReactorBackWhenAHandlerThrows) {
  net::post(io_, [] { throw std::runtime_error("a handler's error"); });
  EXPECT_THROW(knit_server::poll_queued_inside_handler(io_), std::runtime_error);
  int waits_ran = 0;
  auto waits = ready_waits(io_, fd_, 1, waits_ran);
  io_.poll();
  EXPECT_EQ(waits_ran, 1);
}

// Where the reactor's task is not at the front of the queue (a handler before it), the poll is
// a full one: nothing queued is skipped or lost (taking the front for the task would drop that
// handler, and leave the task queued twice).
TEST_F(ReactorWake, PollQueuedWithTheTaskBehindAHandlerPollsInFull) {
  int waits_ran = 0;
  auto waits = ready_waits(io_, fd_, 2, waits_ran);
  // The reactor's run queues both waits' descriptors before its task; poll_one runs the
  // first and leaves the second in front of the task.
  ASSERT_EQ(io_.poll_one(), 1u);
  ASSERT_EQ(waits_ran, 1);
  knit_server::poll_queued_inside_handler(io_);
  EXPECT_EQ(waits_ran, 2);
  EXPECT_TRUE(arm_reactor_wake(io_));
}

// After an arm, a turn that runs only the queue disarms as the reactor's run would: the loop
// is not blocked, and another thread's post interrupts nothing.
TEST_F(ReactorWake, PollQueuedDisarms) {
  ASSERT_TRUE(arm_reactor_wake(io_));
  knit_server::poll_queued_inside_handler(io_);
  bool ran = false;
  post_from_another_thread(io_, [&ran] { ran = true; });
  EXPECT_FALSE(readable_within(fd_, 100));
  knit_server::poll_queued_inside_handler(io_);
  EXPECT_TRUE(ran);
}

// Inside a handler of run(), turn after turn (as io_ring's turns): what the handler posts is
// counted with it, as with poll_inside_handler, and the loop keeps running.
TEST_F(ReactorWake, PollQueuedInsideAHandlerKeepsCount) {
  int ran = 0;
  bool stopped_inside = false;
  net::post(io_, [this, &ran, &stopped_inside] {
    for (int turn = 0; turn < 100; ++turn) {
      net::post(io_, [this, &ran] { net::post(io_, [&ran] { ++ran; }); });
      knit_server::poll_queued_inside_handler(io_);
      if (io_.stopped()) break;
    }
    stopped_inside = io_.stopped();
  });
  io_.run_one();
  EXPECT_FALSE(stopped_inside);
  EXPECT_EQ(ran, 100);
  EXPECT_TRUE(arm_reactor_wake(io_));
}

// The loop of a thread that blocks on the descriptor (as one waiting in an io_uring does),
// against threads posting as fast as they can: every handler runs, and no wait outlasts its
// timeout (a lost wake would leave the loop blocked with handlers queued).
TEST_F(ReactorWake, ALoopBlockedOnTheDescriptorMissesNoForeignPost) {
  constexpr int kThreads = 4;
  constexpr int kPosts = 20000;
  std::atomic<int> ran{0};
  std::vector<std::thread> posters;
  for (int t = 0; t < kThreads; ++t) {
    posters.emplace_back([this, &ran] {
      for (int i = 0; i < kPosts; ++i) {
        net::post(io_, [&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
        // Bursts with gaps, so the loop empties its queue and blocks between them often.
        if (i % 8 == 7) std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    });
  }
  int blocked = 0;
  bool lost = false;
  while (ran.load(std::memory_order_relaxed) < kThreads * kPosts) {
    io_.poll();
    if (ran.load(std::memory_order_relaxed) == kThreads * kPosts) break;
    if (!arm_reactor_wake(io_)) continue;
    ++blocked;
    if (!readable_within(fd_, 10000)) {
      lost = true;
      break;
    }
  }
  for (std::thread& t : posters) t.join();
  EXPECT_FALSE(lost) << "blocked 10 s with " << kThreads * kPosts - ran.load()
                     << " posts queued (after " << blocked << " waits)";
  io_.poll();
  EXPECT_EQ(ran.load(), kThreads * kPosts);
}

}  // namespace

// Fact 5: poll_reactor_once_inside_handler runs the reactor once. A wait whose descriptor
// becomes ready in a handler of that run is left for the next turn (Asio's poll() would run
// the reactor again and run it at once), still on epoll's list, and the pass says nothing
// may have been left (a run of one event is no full batch).
TEST_F(ReactorWake, PollReactorOnceRunsTheReactorOnce) {
  net::posix::stream_descriptor first(io_, ::eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC));
  net::posix::stream_descriptor second(io_, ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  bool second_ran = false;
  first.async_wait(net::posix::stream_descriptor::wait_read, [&second](boost::system::error_code) {
    const std::uint64_t one = 1;
    ASSERT_EQ(::write(second.native_handle(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
  });
  second.async_wait(net::posix::stream_descriptor::wait_read,
                    [&second_ran](boost::system::error_code ec) { second_ran = !ec; });
  ASSERT_TRUE(readable_within(fd_, 2000));
  const knit_server::reactor_pass pass = knit_server::poll_reactor_once_inside_handler(io_);
  EXPECT_EQ(pass.handlers, 1u);
  EXPECT_FALSE(pass.may_have_left);
  EXPECT_FALSE(second_ran);
  EXPECT_TRUE(readable_within(fd_, 0));  // the second descriptor's event waits on the list
  EXPECT_TRUE(arm_reactor_wake(io_));    // the reactor's task is back, alone in the queue
  knit_server::poll_reactor_once_inside_handler(io_);
  EXPECT_TRUE(second_ran);
}

// More descriptors ready than one epoll_wait hands back: a pass says it may have left some,
// and passes until one says not run every wait and leave nothing on epoll's list (a pass
// that never said so would leave 172 waits unrun, with no new wake coming for them).
TEST_F(ReactorWake, PollReactorOnceSaysWhenARunMayHaveLeftDescriptors) {
  constexpr int kDescriptors = 300;
  int ran = 0;
  auto waits = ready_waits(io_, fd_, kDescriptors, ran);
  int passes = 0;
  knit_server::reactor_pass pass;
  do {
    pass = knit_server::poll_reactor_once_inside_handler(io_);
    ++passes;
    if (passes == 1) {
      EXPECT_TRUE(pass.may_have_left);
      EXPECT_LE(ran, static_cast<int>(knit_server::kAsioEpollBatch));
    }
  } while (pass.may_have_left && passes < 10);
  EXPECT_EQ(ran, kDescriptors);
  EXPECT_LE(passes, 4);
  EXPECT_FALSE(readable_within(fd_, 0)) << "entries left on epoll's ready list";
  expect_an_armed_loop_woken_by_a_foreign_post(
      [this] { knit_server::poll_reactor_once_inside_handler(io_); });
}

// Inside a handler of run(), turn after turn (as io_ring's turns): the operations one run
// finds and what their handlers post are counted as the reactor's own run counts them, and
// the loop keeps running.
TEST_F(ReactorWake, PollReactorOnceInsideAHandlerKeepsCount) {
  int ran = 0;
  bool stopped_inside = false;
  std::vector<net::posix::stream_descriptor> waits;
  waits.reserve(100);
  net::post(io_, [this, &ran, &stopped_inside, &waits] {
    for (int turn = 0; turn < 100; ++turn) {
      waits.emplace_back(io_, ::eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC));
      waits.back().async_wait(net::posix::stream_descriptor::wait_read,
                              [this, &ran](boost::system::error_code ec) {
                                if (!ec) net::post(io_, [&ran] { ++ran; });
                              });
      if (!readable_within(fd_, 2000)) break;
      knit_server::poll_reactor_once_inside_handler(io_);
      if (io_.stopped()) break;
    }
    stopped_inside = io_.stopped();
  });
  io_.run_one();
  EXPECT_FALSE(stopped_inside);
  EXPECT_EQ(ran, 100);
  EXPECT_TRUE(arm_reactor_wake(io_));
}

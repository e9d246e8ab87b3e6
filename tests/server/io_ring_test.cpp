// io_ring (server/loops/io_ring.hpp): the set-up and its refusal, a receive and a send through
// the turns, a cancel, the wake by another thread's post, and the teardown that keeps no
// owner and runs no handler.
#include "loops/io_ring.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "knit/asio_host.hpp"
#include "loops/reactor_wake.hpp"
#include "refuse_io_uring.hpp"
#include "telemetry/log_writer.hpp"

namespace {

namespace net = boost::asio;
using knit_server::io_ring;
using knit_server::ring_op;

// What a test's operations complete into: the owner each one holds while pending.
struct probe {
  net::io_context* io = nullptr;
  int result = 1;  // 1: not completed
  int completions = 0;
  bool stop_on_completion = true;
};

void record(std::shared_ptr<void> owner, int result) {
  auto p = std::static_pointer_cast<probe>(std::move(owner));
  p->result = result;
  ++p->completions;
  if (p->stop_on_completion) p->io->stop();
}

class IoRing : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why_not;
    ring_ = io_ring::open(io_, why_not);
    if (!ring_) GTEST_SKIP() << "no io_uring here: " << why_not;
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds_), 0);
    probe_->io = &io_;
  }
  void TearDown() override {
    ring_.reset();
    for (int fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
  }

  net::io_context io_{1};
  net::executor_work_guard<net::io_context::executor_type> keep_running_{io_.get_executor()};
  std::unique_ptr<io_ring> ring_;
  int fds_[2] = {-1, -1};
  std::shared_ptr<probe> probe_ = std::make_shared<probe>();
  ring_op op_{&record};
  knit_server::log_writer err_{STDERR_FILENO};
};

TEST_F(IoRing, ARecvCompletesThroughTheTurns) {
  char buf[16] = {};
  ring_->recv(op_, fds_[0], buf, sizeof buf, probe_);
  EXPECT_TRUE(op_.pending());
  ASSERT_EQ(::write(fds_[1], "hello", 5), 5);
  ring_->run(io_, err_);
  EXPECT_EQ(probe_->result, 5);
  EXPECT_EQ(std::string(buf, 5), "hello");
  EXPECT_FALSE(op_.pending());
  EXPECT_EQ(probe_.use_count(), 1);  // the ring holds the owner no more
}

TEST_F(IoRing, ASendmsgCarriesEveryPiece) {
  char a[] = "one ", b[] = "two";
  iovec iov[2] = {{a, 4}, {b, 3}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = 2;
  ring_->sendmsg(op_, fds_[0], &msg, probe_);
  ring_->run(io_, err_);
  EXPECT_EQ(probe_->result, 7);
  char got[16] = {};
  ASSERT_EQ(::read(fds_[1], got, sizeof got), 7);
  EXPECT_EQ(std::string(got, 7), "one two");
}

TEST_F(IoRing, ACancelEndsAPendingRecvWithECANCELED) {
  char buf[16];
  ring_->recv(op_, fds_[0], buf, sizeof buf, probe_);
  // Cancelled from a handler of the loop, once the receive is in the kernel (a turn later).
  net::steady_timer later(io_, std::chrono::milliseconds(20));
  later.async_wait([this](boost::system::error_code) { ring_->cancel(op_); });
  ring_->run(io_, err_);
  EXPECT_EQ(probe_->result, -ECANCELED);
  EXPECT_EQ(probe_->completions, 1);
}

// The loop waits in the ring; another thread's post must wake it (reactor_wake's arm). A
// lost wake would leave the loop asleep until the watchdog's bytes complete the receive.
TEST_F(IoRing, AnotherThreadsPostWakesTheLoop) {
  char buf[16];
  probe_->stop_on_completion = true;
  ring_->recv(op_, fds_[0], buf, sizeof buf, probe_);
  std::atomic<bool> stopped_by_post{false};
  std::thread poster([this, &stopped_by_post] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    net::post(io_, [this, &stopped_by_post] {
      stopped_by_post = true;
      ring_->cancel(op_);  // the receive ends; its completion stops the loop
    });
  });
  std::atomic<bool> done{false};
  std::thread watchdog([this, &done] {
    for (int i = 0; i < 1000 && !done.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!done.load()) (void)!::write(fds_[1], "w", 1);
  });
  ring_->run(io_, err_);
  done = true;
  poster.join();
  EXPECT_TRUE(stopped_by_post.load());
  EXPECT_EQ(probe_->result, -ECANCELED) << "woken by the watchdog: the post did not wake the ring";
  watchdog.join();
}

// More of Asio's descriptors ready at once than one epoll_wait hands back (128): the turn that
// ran the reactor once knows it may have left some and runs it again before it waits in the
// ring. Nothing else wakes the ring for them (one completion of its poll reported them all):
// without that, the loop sleeps with 172 waits ready until the watchdog's stop.
TEST_F(IoRing, MoreReadyDescriptorsThanOneEpollWaitRunBeforeTheLoopWaits) {
  constexpr int kDescriptors = 300;
  std::vector<net::posix::stream_descriptor> waits;
  waits.reserve(kDescriptors);
  int ran = 0;
  for (int i = 0; i < kDescriptors; ++i) {
    waits.emplace_back(io_, ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    waits.back().async_wait(net::posix::stream_descriptor::wait_read,
                            [this, &ran](boost::system::error_code ec) {
                              if (!ec && ++ran == kDescriptors) io_.stop();
                            });
  }
  // All made readable at once from a handler of the loop, once it has waited in the ring (the
  // reactor's poll submitted): the ring learns of them in one completion.
  net::steady_timer later(io_, std::chrono::milliseconds(20));
  later.async_wait([&waits](boost::system::error_code) {
    const std::uint64_t one = 1;
    for (auto& w : waits) (void)!::write(w.native_handle(), &one, sizeof one);
  });
  std::atomic<bool> done{false};
  std::atomic<bool> rescued{false};
  std::thread watchdog([this, &done, &rescued] {
    for (int i = 0; i < 500 && !done.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!done.load()) {
      rescued = true;
      io_.stop();
    }
  });
  ring_->run(io_, err_);
  done = true;
  watchdog.join();
  EXPECT_FALSE(rescued.load()) << ran << " of " << kDescriptors << " waits ran before the stop";
  EXPECT_EQ(ran, kDescriptors);
}

// The pool's completions through the ring (knit::asio_host::hand_over_completion_watch, as
// host_loop does): a result wakes the ring's watch and is delivered there, and Asio's reactor
// hears nothing of it (with the completion descriptor still in Asio's epoll set, every result
// would wake the reactor for nothing).
TEST_F(IoRing, APoolResultWakesTheRingsWatchAndNotAsiosReactor) {
  knit::pool_options options;
  options.threads = 1;
  knit::pool pool(options);
  knit::asio_host host(io_, pool);
  const int completions = host.hand_over_completion_watch(knit::completion_watch::each_write);
  ring_->watch_readable(
      completions, [](void* h) { static_cast<knit::asio_host*>(h)->completions_ready(); }, &host);
  const int reactor = knit_server::reactor_fd(io_);
  io_.poll();  // the reactor's first run takes its interrupter's start-up event
  pollfd asio{reactor, POLLIN, 0};
  ASSERT_EQ(::poll(&asio, 1, 0), 0);
  int got = 0;
  ASSERT_FALSE(host.submit([](int x) { return x * 2; }, 21,
                           [this, &got](knit::result<int> r) {
                             got = r.ok() ? r.value() : -1;
                             io_.stop();
                           }));
  pollfd ready{completions, POLLIN, 0};
  ASSERT_EQ(::poll(&ready, 1, 10000), 1);  // the result is in, the loop not yet run
  EXPECT_EQ(::poll(&asio, 1, 0), 0) << "the result woke Asio's reactor";
  ring_->run(io_, err_);
  EXPECT_EQ(got, 42);
}

// The teardown: an operation still in the kernel is cancelled and waited for, its owner let go,
// its handler never run.
TEST_F(IoRing, TheDestructorLetsPendingOwnersGoWithoutRunningTheirHandlers) {
  char buf[16];
  std::weak_ptr<probe> watch = probe_;
  ring_->recv(op_, fds_[0], buf, sizeof buf, std::move(probe_));
  net::steady_timer later(io_, std::chrono::milliseconds(20));
  later.async_wait([this](boost::system::error_code) { io_.stop(); });
  ring_->run(io_, err_);  // one turn submits the receive; the timer stops the loop
  ASSERT_TRUE(op_.pending());
  ASSERT_FALSE(watch.expired());
  ring_.reset();
  EXPECT_FALSE(op_.pending());
  EXPECT_TRUE(watch.expired());
}

// A handler that throws, before the turns and inside them, is logged and the loop goes on.
TEST_F(IoRing, AHandlerThatThrowsIsLoggedAndTheLoopGoesOn) {
  int log[2];
  ASSERT_EQ(::pipe2(log, O_CLOEXEC | O_NONBLOCK), 0);
  {
    knit_server::log_writer err(log[1]);
    net::post(io_, [] { throw std::runtime_error("bad handler one"); });
    net::steady_timer later(io_, std::chrono::milliseconds(20));
    later.async_wait([this](boost::system::error_code) {
      ASSERT_EQ(::write(fds_[1], "x", 1), 1);  // the receive completes after this throw
      throw std::runtime_error("bad handler two");
    });
    char buf[16];
    ring_->recv(op_, fds_[0], buf, sizeof buf, probe_);
    ring_->run(io_, err);
  }
  EXPECT_EQ(probe_->result, 1);
  char text[512] = {};
  const ssize_t got = ::read(log[0], text, sizeof text - 1);
  ::close(log[0]);
  ::close(log[1]);
  ASSERT_GT(got, 0);
  const std::string lines(text, static_cast<std::size_t>(got));
  EXPECT_NE(lines.find("bad handler one"), std::string::npos) << lines;
  EXPECT_NE(lines.find("bad handler two"), std::string::npos) << lines;
}

// Refused where a seccomp filter (or kernel.io_uring_disabled) refuses io_uring_setup: null
// and the reason, in a child process that installs such a filter.
TEST(IoRingRefused, ASeccompFilterThatRefusesTheRingGivesNullAndTheReason) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!knit_test::refuse_io_uring()) ::_exit(3);
    net::io_context io{1};
    std::string why_not;
    const auto ring = io_ring::open(io, why_not);
    if (ring) ::_exit(1);
    ::_exit(why_not == "io_uring_setup: Operation not permitted" ? 0 : 2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: opened anyway; 2: another reason; 3: no filter";
}

}  // namespace

// io_ring's pair (io_ring::send_then_recv): a send whose success posts no completion and a
// receive linked behind it. One handler runs for each pair: the receive's when the message
// went out, the send's when it failed (the kernel then skips the receive's completion, which
// the ring relies on), after a cancel of either too; and the teardown with a pair pending.
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "loops/io_ring.hpp"
#include "telemetry/log_writer.hpp"

namespace {

namespace net = boost::asio;
using knit_server::io_ring;
using knit_server::ring_op;

// The pair's owner: what its two handlers saw, in order.
struct pair_probe {
  net::io_context* io = nullptr;
  std::vector<std::string> events;
};

void on_send(std::shared_ptr<void> owner, int result) {
  auto* p = static_cast<pair_probe*>(owner.get());
  p->events.push_back("send " + std::to_string(result));
  p->io->stop();  // a failed send ends the pair
}

void on_recv(std::shared_ptr<void> owner, int result) {
  auto* p = static_cast<pair_probe*>(owner.get());
  p->events.push_back("recv " + std::to_string(result));
  p->io->stop();
}

class IoRingPair : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why_not;
    ring_ = io_ring::open(io_, why_not);
    if (!ring_) GTEST_SKIP() << "no io_uring here: " << why_not;
    if (!ring_->can_link_sends()) GTEST_SKIP() << "this kernel does not link a skipped send";
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds_), 0);
    probe_->io = &io_;
    // A pair that never ends fails the test's expectations instead of hanging it.
    watchdog_.expires_after(std::chrono::seconds(10));
    watchdog_.async_wait([this](boost::system::error_code ec) {
      if (!ec) io_.stop();
    });
  }
  void TearDown() override {
    ring_.reset();
    for (int fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
  }

  // Queues the pair on fds_[0]: `bytes` of 'x' out, then a receive into buf_.
  void queue_pair(std::size_t bytes) {
    out_.assign(bytes, 'x');
    iov_ = iovec{out_.data(), out_.size()};
    msg_ = msghdr{};
    msg_.msg_iov = &iov_;
    msg_.msg_iovlen = 1;
    ring_->send_then_recv(send_, fds_[0], &msg_, recv_, buf_, sizeof buf_, probe_);
  }

  // Runs `act` from a handler of the loop, `after` from now.
  template <class Act>
  void later(std::chrono::milliseconds after, Act act) {
    timer_.expires_after(after);
    timer_.async_wait([act](boost::system::error_code ec) {
      if (!ec) act();
    });
  }

  net::io_context io_{1};
  net::executor_work_guard<net::io_context::executor_type> keep_running_{io_.get_executor()};
  net::steady_timer timer_{io_};
  net::steady_timer watchdog_{io_};
  std::unique_ptr<io_ring> ring_;
  int fds_[2] = {-1, -1};
  std::shared_ptr<pair_probe> probe_ = std::make_shared<pair_probe>();
  ring_op send_{&on_send};
  ring_op recv_{&on_recv};
  std::string out_;
  iovec iov_{};
  msghdr msg_{};
  char buf_[64] = {};
  knit_server::log_writer err_{STDERR_FILENO};
};

TEST_F(IoRingPair, TheReceiveAloneCompletesAndEndsBothWhenTheMessageWentOut) {
  queue_pair(5);
  later(std::chrono::milliseconds(20), [this] {
    char got[16];
    ASSERT_EQ(::read(fds_[1], got, sizeof got), 5);  // the send went out at the turn's submit
    ASSERT_EQ(::write(fds_[1], "next", 4), 4);
  });
  ring_->run(io_, err_);
  // Without IOSQE_CQE_SKIP_SUCCESS the send's own completion would run its handler first.
  EXPECT_EQ(probe_->events, (std::vector<std::string>{"recv 4"}));
  EXPECT_EQ(std::string(buf_, 4), "next");
  EXPECT_FALSE(send_.pending());
  EXPECT_FALSE(recv_.pending());
  EXPECT_EQ(probe_.use_count(), 1);  // neither operation holds the owner
}

TEST_F(IoRingPair, ASendThatFailsEndsThePairWithItsOwnCompletionAlone) {
  ::close(fds_[1]);  // nobody reads: the send fails with EPIPE
  fds_[1] = -1;
  queue_pair(5);
  // Should a receive's completion still come, it would run once more turns are taken.
  later(std::chrono::milliseconds(50), [this] { io_.stop(); });
  ring_->run(io_, err_);
  io_.restart();
  ring_->run(io_, err_);
  EXPECT_EQ(probe_->events, (std::vector<std::string>{"send " + std::to_string(-EPIPE)}));
  EXPECT_FALSE(send_.pending());
  EXPECT_FALSE(recv_.pending());
  EXPECT_EQ(probe_.use_count(), 1);
}

// A message larger than the socket takes waits in the kernel (MSG_WAITALL: the rest is
// sent when there is room); cancelling the send then fails it, and ends its receive.
TEST_F(IoRingPair, CancellingAStalledSendEndsItAndItsReceive) {
  queue_pair(4 << 20);
  later(std::chrono::milliseconds(20), [this] { ring_->cancel(send_); });
  ring_->run(io_, err_);
  ASSERT_EQ(probe_->events.size(), 1u) << ::testing::PrintToString(probe_->events);
  // Cancelled with part of the message out: the bytes sent, short of the whole (a failure
  // the session reads as a broken write), or -ECANCELED when none had gone.
  ASSERT_EQ(probe_->events[0].rfind("send ", 0), 0u);
  const int sent = std::stoi(probe_->events[0].substr(5));
  EXPECT_TRUE(sent == -ECANCELED || (sent > 0 && sent < (4 << 20))) << sent;
  EXPECT_FALSE(send_.pending());
  EXPECT_FALSE(recv_.pending());
  EXPECT_EQ(probe_.use_count(), 1);
}

// The message went out and the receive waits (an idle keep-alive connection): cancelling
// the receive ends the pair, with no handler for the send.
TEST_F(IoRingPair, CancellingTheReceiveAfterTheSendWentOutEndsThePair) {
  queue_pair(5);
  later(std::chrono::milliseconds(20), [this] { ring_->cancel(recv_); });
  ring_->run(io_, err_);
  EXPECT_EQ(probe_->events, (std::vector<std::string>{"recv " + std::to_string(-ECANCELED)}));
  EXPECT_FALSE(send_.pending());
  EXPECT_EQ(probe_.use_count(), 1);
}

// The teardown with a pair whose send is stalled: both end, no handler runs, the owner goes.
TEST_F(IoRingPair, TheDestructorEndsAStalledPairWithoutRunningItsHandlers) {
  std::weak_ptr<pair_probe> watch = probe_;
  queue_pair(4 << 20);
  later(std::chrono::milliseconds(20), [this] { io_.stop(); });
  ring_->run(io_, err_);
  ASSERT_TRUE(send_.pending());
  ASSERT_TRUE(recv_.pending());
  probe_.reset();
  ASSERT_FALSE(watch.expired());  // the ring holds it
  ring_.reset();
  EXPECT_FALSE(send_.pending());
  EXPECT_FALSE(recv_.pending());
  EXPECT_TRUE(watch.expired());
}

}  // namespace

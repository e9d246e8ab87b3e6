// reactor_membership (server/loops/reactor_membership.hpp): a connected socket taken out of
// Asio's epoll set no longer wakes the reactor's descriptor; put back, Asio's operations on it
// work as before; and it is never taken out from under an Asio operation that waits.
#include "loops/reactor_membership.hpp"

#include <poll.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "loops/reactor_wake.hpp"

namespace {

namespace net = boost::asio;
using knit_server::leave_reactor;
using knit_server::reactor_socket;
using knit_server::rejoin_reactor;
using net::ip::tcp;

bool readable_within(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1 && (p.revents & POLLIN) != 0;
}

class ReactorMembership : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!knit_server::kReactorWakeActive) GTEST_SKIP() << "not this Asio (Boost 1.81, epoll)";
    epoll_fd_ = knit_server::reactor_fd(io_);
    tcp::acceptor acceptor(io_, tcp::endpoint(net::ip::address_v4::loopback(), 0));
    peer_.connect(acceptor.local_endpoint());
    acceptor.accept(socket_);
    io_.poll();  // the reactor's first run: nothing is ready
    ASSERT_FALSE(readable_within(epoll_fd_, 0));
  }

  // Sends `bytes` from the peer and waits until they are in the socket's receive queue.
  void peer_sends(const std::string& bytes) {
    net::write(peer_, net::buffer(bytes));
    pollfd p{socket_.native_handle(), POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 2000), 1);
  }

  net::io_context io_{1};
  net::executor_work_guard<net::io_context::executor_type> keep_running_{io_.get_executor()};
  int epoll_fd_ = -1;
  reactor_socket socket_{io_};
  net::io_context peer_io_;
  tcp::socket peer_{peer_io_};
};

// In the set (as Asio put it), a segment wakes the reactor's descriptor; out of it, none does
// (removing the EPOLL_CTL_DEL fails this).
TEST_F(ReactorMembership, ASocketThatLeftWakesNothing) {
  peer_sends("a");
  EXPECT_TRUE(readable_within(epoll_fd_, 0));
  io_.poll();
  std::string drained(1, '\0');
  socket_.read_some(net::buffer(drained));
  ASSERT_TRUE(leave_reactor(socket_));
  peer_sends("b");
  EXPECT_FALSE(readable_within(epoll_fd_, 100));
}

// Put back, an Asio read that must wait is completed by epoll, and bytes that came while the
// socket was out are reported at once (EPOLL_CTL_ADD checks readiness).
TEST_F(ReactorMembership, ARejoinedSocketServesAsiosOperations) {
  ASSERT_TRUE(leave_reactor(socket_));
  peer_sends("while out");
  ASSERT_FALSE(readable_within(epoll_fd_, 0));
  ASSERT_FALSE(rejoin_reactor(socket_));
  EXPECT_TRUE(readable_within(epoll_fd_, 0));
  io_.poll();
  std::string got(9, '\0');
  ASSERT_EQ(socket_.read_some(net::buffer(got)), 9u);
  EXPECT_EQ(got, "while out");

  std::string next(4, '\0');
  std::size_t read = 0;
  net::async_read(socket_, net::buffer(next),
                  [&read](boost::system::error_code ec, std::size_t n) { read = ec ? 0 : n; });
  io_.poll();
  ASSERT_EQ(read, 0u);  // nothing yet: the read waits for epoll
  peer_sends("next");
  ASSERT_TRUE(readable_within(epoll_fd_, 2000));
  io_.poll();
  EXPECT_EQ(read, 4u);
  EXPECT_EQ(next, "next");
}

// A write that must wait for room (EPOLLOUT, added by Asio with EPOLL_CTL_MOD, which fails for
// a socket out of the set) works on a rejoined socket: the events Asio registered are the ones
// put back.
TEST_F(ReactorMembership, ARejoinedSocketTakesAWriteThatWaitsForRoom) {
  ASSERT_TRUE(leave_reactor(socket_));
  ASSERT_FALSE(rejoin_reactor(socket_));
  const std::string big(16 << 20, 'x');
  bool written = false;
  net::async_write(socket_, net::buffer(big),
                   [&written](boost::system::error_code ec, std::size_t n) {
                     written = !ec && n == (16u << 20);
                   });
  std::thread reader([this] {
    std::string sink(1 << 16, '\0');
    std::size_t total = 0;
    boost::system::error_code ec;
    while (total < (16u << 20) && !ec) total += peer_.read_some(net::buffer(sink), ec);
  });
  // A loop's turns: what is queued, then a wait for the reactor (each of the write's parts
  // after the first waits for room, reported by epoll).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!written && std::chrono::steady_clock::now() < give_up) {
    io_.poll();
    if (!written) readable_within(epoll_fd_, 10);
  }
  reader.join();
  EXPECT_TRUE(written);
}

// An Asio operation waiting on the socket keeps it in the set: taken out, the read would never
// complete (removing the queue check fails this).
TEST_F(ReactorMembership, ASocketWithAWaitingAsioOperationStays) {
  std::string got(1, '\0');
  bool read = false;
  socket_.async_read_some(net::buffer(got),
                          [&read](boost::system::error_code ec, std::size_t) { read = !ec; });
  io_.poll();
  ASSERT_FALSE(read);
  EXPECT_FALSE(leave_reactor(socket_));
  peer_sends("c");
  ASSERT_TRUE(readable_within(epoll_fd_, 2000));
  io_.poll();
  EXPECT_TRUE(read);
}

// A closed socket is neither taken out nor put back, and asks for nothing.
TEST_F(ReactorMembership, AClosedSocketIsLeftAlone) {
  socket_.close();
  EXPECT_FALSE(leave_reactor(socket_));
  EXPECT_FALSE(rejoin_reactor(socket_));
}

}  // namespace

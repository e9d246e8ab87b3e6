// drained_read.hpp: after a read into a drained_buffer that empties the socket the next read
// waits for epoll (the bytes that came meanwhile stay in the kernel until the loop polls);
// after one that leaves bytes, or a FIN, it tries at once; no wake is lost. Each case is
// forced: the bytes (or the FIN) are there before the next read starts, and
// socket::available() (FIONREAD) or a poll of the loop without waiting shows what that start
// did.
#include "loops/drained_read.hpp"

#include <array>
#include <cstddef>
#include <functional>
#include <string_view>
#include <thread>

#include <gtest/gtest.h>
#include <poll.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;

// A connected loopback pair: `server` is read with drained_buffer on `io`, `client` writes
// with blocking calls.
struct socket_pair {
  net::io_context io;
  tcp::socket server{io};
  tcp::socket client{io};

  socket_pair() {
    tcp::acceptor acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
    // As the server's listener does: a connection established from here on inherits the
    // option (the kernel copies the listener's when the handshake completes).
    EXPECT_TRUE(knit_server::enable_queue_hint(acceptor.native_handle()));
    client.connect(acceptor.local_endpoint());
    acceptor.accept(server);
    server.non_blocking(true);
  }

  void send(std::string_view bytes) { net::write(client, net::buffer(bytes.data(), bytes.size())); }

  // Bytes queued at the server's socket, not yet read (FIONREAD).
  std::size_t queued() { return server.available(); }

  // Waits until `n` bytes are queued at the server's socket. Loopback usually queues them
  // before the client's write returns, but the kernel may finish that in its softirq thread:
  // the cases below need the bytes there before the read starts.
  void wait_queued(std::size_t n) {
    while (queued() < n) std::this_thread::yield();
  }

  // Waits until the client's FIN has reached the server's socket (poll without a timeout).
  void wait_fin() {
    pollfd fd{server.native_handle(), POLLRDHUP, 0};
    while ((fd.revents & POLLRDHUP) == 0) ASSERT_GE(::poll(&fd, 1, -1), 0);
  }
};

// One read into a drained_buffer, and what it completed with once it has.
struct read_state {
  bool done = false;
  boost::system::error_code ec;
  std::size_t bytes = 0;
};

void start_read(socket_pair& p, net::mutable_buffer into, read_state& r) {
  r = {};
  p.server.async_read_some(knit_server::drained_buffer(into),
                           [&r](boost::system::error_code ec, std::size_t n) {
                             r.ec = ec;
                             r.bytes = n;
                             r.done = true;
                           });
}

// Runs the loop until `r` has completed.
void run_until_done(socket_pair& p, const read_state& r) {
  p.io.restart();
  while (!r.done) p.io.run_one();
}

// Starts one read into `room` bytes of `buf`, sends `bytes` and runs the loop until the read
// completes. The read starts first, so it is performed on the EPOLLIN the bytes raise, as the
// server's reads are (a read that found its bytes at once would leave that event pending,
// and the event makes the next read try at once).
std::size_t read_once(socket_pair& p, std::array<char, 64>& buf, std::size_t room,
                      std::string_view bytes) {
  read_state r;
  start_read(p, net::buffer(buf.data(), room), r);
  p.send(bytes);
  p.wait_queued(bytes.size());
  run_until_done(p, r);
  EXPECT_FALSE(r.ec) << r.ec.message();
  return r.bytes;
}

TEST(drained_read, a_read_that_empties_the_socket_makes_the_next_read_wait_for_epoll) {
  if (!knit_server::kDrainedReadActive) GTEST_SKIP() << "not this Asio (drained_read.hpp)";
  socket_pair p;
  std::array<char, 64> buf{};
  ASSERT_EQ(read_once(p, buf, buf.size(), "abc"), 3u);  // short: 3 of 64, the socket is empty

  // Bytes arrive before the next read starts. A read tried at once would take them inside
  // async_read_some; a drained read leaves them in the kernel until the loop's epoll_wait.
  p.send("defg");
  p.wait_queued(4);
  read_state r;
  start_read(p, net::buffer(buf), r);
  EXPECT_EQ(p.queued(), 4u) << "the read was tried at once after one that emptied the socket";
  EXPECT_FALSE(r.done);

  // No lost wake: the EPOLLIN raised by "defg" completes the waiting read.
  run_until_done(p, r);
  EXPECT_FALSE(r.ec);
  EXPECT_EQ(r.bytes, 4u);
  EXPECT_EQ(std::string_view(buf.data(), r.bytes), "defg");
}

TEST(drained_read, a_read_that_leaves_bytes_lets_the_next_read_try_at_once) {
  if (!knit_server::kDrainedReadActive) GTEST_SKIP() << "not this Asio (drained_read.hpp)";
  socket_pair p;
  std::array<char, 64> buf{};
  // Exactly the room asked, with more queued: the next read must try at once.
  ASSERT_EQ(read_once(p, buf, 4, "0123456789"), 4u);
  ASSERT_EQ(p.queued(), 6u);
  read_state r;
  start_read(p, net::buffer(buf), r);
  EXPECT_EQ(p.queued(), 0u) << "the read after one that left bytes waited for epoll";
  run_until_done(p, r);
  EXPECT_EQ(r.bytes, 6u);
}

TEST(drained_read, a_read_before_a_pending_fin_lets_the_next_read_try_at_once) {
  if (!knit_server::kDrainedReadActive) GTEST_SKIP() << "not this Asio (drained_read.hpp)";
  socket_pair p;
  std::array<char, 64> buf{};
  // The first read waits for epoll; then the bytes and the FIN come, both before the loop
  // polls, so one EPOLLIN reports both and no other event follows.
  read_state r;
  start_read(p, net::buffer(buf), r);
  p.send("xy");
  p.client.shutdown(tcp::socket::shutdown_send);
  p.wait_fin();
  run_until_done(p, r);
  EXPECT_FALSE(r.ec);
  ASSERT_EQ(r.bytes, 2u);  // short, but the FIN is still pending

  // The end of stream must be read at once: no event will come for it any more. A read
  // that waited for epoll here would never complete (poll() runs what is ready and returns).
  start_read(p, net::buffer(buf), r);
  p.io.restart();
  p.io.poll();
  ASSERT_TRUE(r.done) << "the read after the data waited for an event that will not come";
  EXPECT_EQ(r.ec, net::error::eof);
}

// A request/response ping-pong where every read is short, so every read after the first
// waits for epoll: a lost wake hangs it (ctest's timeout). The client answers each echo with
// the next message at once, racing the server's next read.
TEST(drained_read, a_ping_pong_of_short_reads_loses_no_wake) {
  socket_pair p;
  constexpr int kRounds = 20000;
  std::array<char, 64> buf{};
  int rounds = 0;
  std::function<void()> read_next;
  read_next = [&] {
    p.server.async_read_some(knit_server::drained_buffer(net::buffer(buf)),
                             [&](boost::system::error_code ec, std::size_t n) {
                               ASSERT_FALSE(ec) << ec.message();
                               ASSERT_EQ(n, 1u);
                               net::write(p.server, net::buffer(buf.data(), n));
                               if (++rounds < kRounds) read_next();
                             });
  };
  // The client runs on its own thread with blocking calls.
  std::thread client([&] {
    char c = 'a';
    for (int i = 0; i < kRounds; ++i) {
      net::write(p.client, net::buffer(&c, 1));
      net::read(p.client, net::buffer(&c, 1));
    }
  });
  read_next();
  p.io.run();
  client.join();
  EXPECT_EQ(rounds, kRounds);
}

}  // namespace

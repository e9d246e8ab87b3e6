// The accept loop: do_accept -> on_accept -> (session) -> do_accept, with a connection cap and
// an EMFILE back-off.
#include "loops/listener.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <iostream>
#include <memory>
#include <utility>

#include <boost/system/system_error.hpp>

#include "loops/drained_read.hpp"
#include "loops/server.hpp"
#include "loops/session.hpp"

namespace knit_server {

namespace net = boost::asio;
using tcp = net::ip::tcp;

listener::listener(net::io_context& io, server& srv)
    : server_(srv),
      acceptor_(io.get_executor()),
      backoff_(io),
      exec_(srv.threading().executor_for(io.get_executor())) {}

tcp::endpoint listener::open(const tcp::endpoint& endpoint, bool share_port) {
  acceptor_.open(endpoint.protocol());
  // Let a restarted server bind at once even while the old one's connections sit in
  // TIME_WAIT; the benchmark restarts the server on the same port between runs.
  acceptor_.set_option(net::socket_base::reuse_address(true));
  if (share_port) {
    // Asio has no portable name for it. Linux lets only sockets of the same user join the
    // port's group, and hashes each new connection to one of them.
    const int on = 1;
    if (::setsockopt(acceptor_.native_handle(), SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0) {
      throw boost::system::system_error(errno, boost::system::system_category(),
                                        "setsockopt(SO_REUSEPORT)");
    }
  }
  // Cap what the kernel queues for each client (KNIT_SNDBUF_KB; Linux doubles it): a client
  // that does not read parks at most that in the kernel, which the write budget counts
  // (write_budget.hpp). Set on the listening socket, every accepted socket inherits it (the
  // kernel copies the size and its lock against autotuning): no syscall per connection.
  // 0 leaves the kernel's autotuning.
  if (server_.config().sndbuf_kb != 0) {
    const auto bytes = static_cast<int>(server_.config().sndbuf_kb * 1024);
    acceptor_.set_option(net::socket_base::send_buffer_size(bytes));
  }
  // Every read then says whether it emptied the socket, so that the session's next read waits
  // for epoll instead of finding nothing (drained_read.hpp). Inherited by accepted sockets.
  enable_queue_hint(acceptor_.native_handle());
  acceptor_.bind(endpoint);
  acceptor_.listen(net::socket_base::max_listen_connections);
  return acceptor_.local_endpoint();
}

void listener::run() { do_accept(); }

void listener::stop() {
  exec_.post([this] { close(); });
}

void listener::close() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  backoff_.cancel();
}

void listener::do_accept() {
  // The new connection gets its own socket on the same io_context. With one host thread
  // no strand is needed anywhere; in multi mode the session makes its own.
  exec_.start(
      [this](auto&& handler) { acceptor_.async_accept(std::forward<decltype(handler)>(handler)); },
      [this](boost::beast::error_code ec, socket_type socket) {
        on_accept(ec, std::move(socket));
      });
}

void listener::on_accept(boost::beast::error_code ec, socket_type socket) {
  // stop() closed the acceptor. A connection accepted just before that is closed with the
  // socket going out of scope: its client has not been sent a byte.
  if (ec == net::error::operation_aborted || !acceptor_.is_open() || server_.stopping()) return;

  if (ec) {
    // Almost always out of file descriptors (EMFILE/ENFILE). Accepting again at once would
    // spin the host thread on the same error, so wait for some connections to close.
    std::cerr << "knit-server: accept: " << ec.message() << " (retrying in 50 ms)\n";
    backoff_.expires_after(std::chrono::milliseconds(50));
    exec_.start(
        [this](auto&& handler) { backoff_.async_wait(std::forward<decltype(handler)>(handler)); },
        [this](boost::beast::error_code wait_ec) {
          if (!wait_ec) do_accept();
        });
    return;
  }

  if (!server_.limit().try_reserve()) {
    // Over KNIT_MAX_CONNECTIONS (every host's connections together): close the newcomer at
    // once rather than let every open connection's memory and the host threads' time grow
    // without bound.
    boost::system::error_code ignored;
    socket.close(ignored);
  } else {
    // Small responses must leave at once, not wait for Nagle to gather a full segment.
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    start_session(std::move(socket));
  }

  // Accept the next connection.
  do_accept();
}

void listener::start_session(socket_type socket) {
  // The session holds the place reserved for it from here on (server::detach gives it back);
  // until it exists, the place is ours to give back.
  std::shared_ptr<session> s;
  try {
    s = std::make_shared<session>(std::move(socket), server_);
  } catch (const std::exception& e) {
    // Out of memory for one more session: that connection is closed, the loop goes on.
    server_.limit().release();
    std::cerr << "knit-server: cannot start a session: " << e.what() << '\n';
    return;
  }
  try {
    s->run();
  } catch (const std::exception& e) {
    std::cerr << "knit-server: cannot start a session: " << e.what() << '\n';
  }
}

}  // namespace knit_server

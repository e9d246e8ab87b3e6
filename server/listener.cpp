// The accept loop: do_accept -> on_accept -> (session) -> do_accept, with a connection cap and
// an EMFILE back-off.
#include "listener.hpp"

#include <chrono>
#include <iostream>
#include <memory>
#include <utility>

#include "server.hpp"
#include "session.hpp"

namespace knit_server {

namespace net = boost::asio;
using tcp = net::ip::tcp;

listener::listener(net::io_context& io, server& srv)
    : server_(srv),
      acceptor_(io.get_executor()),
      backoff_(io),
      exec_(srv.threading().executor_for(io.get_executor())) {}

tcp::endpoint listener::open(const tcp::endpoint& endpoint) {
  acceptor_.open(endpoint.protocol());
  // Let a restarted server bind at once even while the old one's connections sit in
  // TIME_WAIT; the benchmark restarts the server on the same port between runs.
  acceptor_.set_option(net::socket_base::reuse_address(true));
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

  if (server_.connections() >= server_.config().max_connections) {
    // Over KNIT_MAX_CONNECTIONS: close the newcomer at once rather than let every open
    // connection's memory and the host thread's time grow without bound.
    boost::system::error_code ignored;
    socket.close(ignored);
  } else {
    // Small responses must leave at once, not wait for Nagle to gather a full segment.
    boost::system::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    try {
      std::make_shared<session>(std::move(socket), server_)->run();
    } catch (const std::exception& e) {
      // Out of memory for one more session: that connection is closed, the loop goes on.
      std::cerr << "knit-server: cannot start a session: " << e.what() << '\n';
    }
  }

  // Accept the next connection.
  do_accept();
}

}  // namespace knit_server

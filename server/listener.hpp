// Accepts connections and starts one session per connection, up to KNIT_MAX_CONNECTIONS.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>

namespace knit_server {

class server;

class listener {
 public:
  listener(boost::asio::io_context& io, server& srv);

  // Opens, binds and listens; returns the bound endpoint. Throws on failure.
  boost::asio::ip::tcp::endpoint open(const boost::asio::ip::tcp::endpoint& endpoint);

  // Starts accepting. The accept loop runs until stop().
  void run();

  // Closes the acceptor: the pending accept completes with operation_aborted and the loop
  // ends. Connections already accepted are the server's business.
  void stop();

 private:
  void do_accept();
  using socket_type = boost::asio::basic_stream_socket<boost::asio::ip::tcp,
                                                      boost::asio::io_context::executor_type>;
  void on_accept(boost::beast::error_code ec, socket_type socket);

  boost::asio::io_context& io_;
  server& server_;
  // The listening socket, typed on the io_context's executor so accepted sockets are too.
  boost::asio::basic_socket_acceptor<boost::asio::ip::tcp, boost::asio::io_context::executor_type>
      acceptor_;
  boost::asio::steady_timer backoff_;         // pauses the loop when accept fails (EMFILE)
};

}  // namespace knit_server

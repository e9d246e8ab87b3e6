// Accepts connections and starts one session per connection, up to KNIT_MAX_CONNECTIONS (for
// the whole process, whatever KNIT_HOSTS is).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>

#include "loops/connection_executor.hpp"

namespace knit_server {

class server;

// Threads: one accept is pending at a time, so its handlers never overlap. They run on exec_
// (connection_executor.hpp): in KNIT_MODE=multi a strand, where stop(), called from another
// thread, posts the close too; in the other modes the loop's own thread, where stop(), called
// from the control thread, posts the close.
class listener {
 public:
  listener(boost::asio::io_context& io, server& srv);

  // Opens, binds and listens; returns the bound endpoint. Throws on failure.
  // `share_port`: SO_REUSEPORT, so that each host's listener can bind the same port
  // (KNIT_HOSTS>1). Never with one host: a second server started on a taken port must fail
  // to listen, not take half of the first one's connections.
  boost::asio::ip::tcp::endpoint open(const boost::asio::ip::tcp::endpoint& endpoint,
                                      bool share_port);

  // Starts accepting. The accept loop runs until stop().
  void run();

  // Closes the acceptor: the pending accept completes with operation_aborted and the loop
  // ends. Connections already accepted are the server's business. May be called from any
  // thread; the close happens on the loop's thread (multi: its strand), shortly after.
  void stop();

 private:
  void do_accept();
  using socket_type = boost::asio::basic_stream_socket<boost::asio::ip::tcp,
                                                       boost::asio::io_context::executor_type>;
  void on_accept(boost::beast::error_code ec, socket_type socket);
  // Makes the session for an accepted socket whose place in the connection limit is taken.
  void start_session(socket_type socket);
  void close();

  server& server_;
  // The listening socket, typed on the io_context's executor so accepted sockets are too.
  boost::asio::basic_socket_acceptor<boost::asio::ip::tcp, boost::asio::io_context::executor_type>
      acceptor_;
  boost::asio::steady_timer backoff_;  // pauses the loop when accept fails (EMFILE)
  // Where the accept loop's handlers and close() run.
  connection_executor exec_;
};

}  // namespace knit_server

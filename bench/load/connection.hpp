// One keep-alive HTTP/1.1 client connection: non-blocking connect, request write, response read.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "clock.hpp"
#include "response_parser.hpp"

namespace knit_load {

struct route_slice;

struct endpoint {
  sockaddr_storage addr{};
  socklen_t len = 0;
};

// Resolves host:port (numeric or name; first address wins). Throws std::runtime_error.
endpoint resolve_endpoint(const std::string& host, std::uint16_t port);

// Where a client_connection is in its life.
enum class connection_state {
  kDown,        // no socket (never opened, closed, or waiting to retry a failed connect)
  kConnecting,  // non-blocking connect in progress
  kIdle,        // connected, no request outstanding
  kBusy,        // request written (perhaps partly), response not complete
};

// What handling a client_connection reported, for its worker to act on.
enum class connection_event {
  kNone,           // nothing for the worker to do yet
  kConnected,      // kConnecting -> kIdle
  kConnectFailed,  // -> kDown
  kResponse,       // kBusy -> kIdle; see status()/keep_alive()
  kIoError,        // error or premature close while kBusy (socket still open)
  kParseError,     // malformed response while kBusy (socket still open)
  kPeerClosed,     // the server closed or spoke on an idle connection (socket still open)
};

// The connection only moves bytes and reports what happened; the worker that owns it
// decides what each event means for the statistics and what the connection does next.
// It registers itself with the worker's epoll set (data.ptr = this), so it must not move.
class client_connection {
 public:
  client_connection(int epoll_fd, route_slice* slice) : epoll_fd_(epoll_fd), slice_(slice) {}
  ~client_connection() { close(); }
  client_connection(const client_connection&) = delete;
  client_connection& operator=(const client_connection&) = delete;

  // Starts a non-blocking connect. Returns kConnectFailed or kNone: success is always
  // reported later through on_event(), even when connect() completes at once, so that
  // handling a connection never recurses into itself.
  connection_event connect(const endpoint& target, nanos now);
  // Writes `request` (which must outlive the response); the connection must be kIdle.
  // Returns kNone or kIoError.
  connection_event send(const std::string& request, bool head_request, nanos intended, nanos now);
  // Handles epoll readiness bits. `buf` is scratch space shared by the worker's connections.
  connection_event on_event(std::uint32_t events, char* buf, std::size_t cap);
  void close();

  connection_state state() const { return state_; }
  route_slice* slice() const { return slice_; }
  int fd() const { return fd_; }
  nanos intended_at() const { return intended_at_; }
  nanos sent_at() const { return sent_at_; }
  nanos connect_started_at() const { return connect_started_at_; }
  int status() const { return parser_.status(); }
  // Whether the last response left the connection reusable.
  bool keep_alive() const { return parser_.keep_alive() && !must_close_; }
  const std::string& error() const { return error_; }

  // When a kDown connection should try to connect again (managed by the worker).
  nanos retry_at = 0;

 private:
  connection_event flush();
  connection_event read_some(char* buf, std::size_t cap);
  void set_interest(std::uint32_t events);
  void set_error_from_errno(const char* what);

  int epoll_fd_;
  route_slice* slice_;
  int fd_ = -1;
  connection_state state_ = connection_state::kDown;
  const std::string* request_ = nullptr;
  std::size_t written_ = 0;
  bool want_write_ = false;
  bool must_close_ = false;
  nanos intended_at_ = 0;
  nanos sent_at_ = 0;
  nanos connect_started_at_ = 0;
  response_parser parser_;
  std::string error_;
};

}  // namespace knit_load

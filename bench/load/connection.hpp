// One keep-alive HTTP/1.1 client connection: non-blocking connect, request write, response read.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "clock.hpp"
#include "response_parser.hpp"

namespace knit_load {

struct RouteSlice;

struct Endpoint {
  sockaddr_storage addr{};
  socklen_t len = 0;
};

// Resolves host:port (numeric or name; first address wins). Throws std::runtime_error.
Endpoint resolve_endpoint(const std::string& host, std::uint16_t port);

// The connection only moves bytes and reports what happened; the worker that owns it
// decides what each event means for the statistics and what the connection does next.
// It registers itself with the worker's epoll set (data.ptr = this), so it must not move.
class Connection {
 public:
  enum class State {
    kDown,        // no socket (never opened, closed, or waiting to retry a failed connect)
    kConnecting,  // non-blocking connect in progress
    kIdle,        // connected, no request outstanding
    kBusy,        // request written (perhaps partly), response not complete
  };
  enum class Event {
    kNone,           // nothing for the worker to do yet
    kConnected,      // kConnecting -> kIdle
    kConnectFailed,  // -> kDown
    kResponse,       // kBusy -> kIdle; see status()/keep_alive()
    kIoError,        // error or premature close while kBusy (socket still open)
    kParseError,     // malformed response while kBusy (socket still open)
    kPeerClosed,     // the server closed or spoke on an idle connection (socket still open)
  };

  Connection(int epoll_fd, RouteSlice* slice) : epoll_fd_(epoll_fd), slice_(slice) {}
  ~Connection() { close(); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts a non-blocking connect. Returns kConnectFailed or kNone: success is always
  // reported later through on_event(), even when connect() completes at once, so that
  // handling a connection never recurses into itself.
  Event connect(const Endpoint& target, Nanos now);
  // Writes `request` (which must outlive the response); the connection must be kIdle.
  // Returns kNone or kIoError.
  Event send(const std::string& request, bool head_request, Nanos intended, Nanos now);
  // Handles epoll readiness bits. `buf` is scratch space shared by the worker's connections.
  Event on_event(std::uint32_t events, char* buf, std::size_t cap);
  void close();

  State state() const { return state_; }
  RouteSlice* slice() const { return slice_; }
  int fd() const { return fd_; }
  Nanos intended_at() const { return intended_at_; }
  Nanos sent_at() const { return sent_at_; }
  Nanos connect_started_at() const { return connect_started_at_; }
  int status() const { return parser_.status(); }
  // Whether the last response left the connection reusable.
  bool keep_alive() const { return parser_.keep_alive() && !must_close_; }
  const std::string& error() const { return error_; }

  // When a kDown connection should try to connect again (managed by the worker).
  Nanos retry_at = 0;

 private:
  Event flush();
  Event read_some(char* buf, std::size_t cap);
  void set_interest(std::uint32_t events);
  void set_error_from_errno(const char* what);

  int epoll_fd_;
  RouteSlice* slice_;
  int fd_ = -1;
  State state_ = State::kDown;
  const std::string* request_ = nullptr;
  std::size_t written_ = 0;
  bool want_write_ = false;
  bool must_close_ = false;
  Nanos intended_at_ = 0;
  Nanos sent_at_ = 0;
  Nanos connect_started_at_ = 0;
  ResponseParser parser_;
  std::string error_;
};

}  // namespace knit_load

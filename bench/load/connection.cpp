// One keep-alive HTTP/1.1 client connection: socket calls and the per-connection state machine.
#include "connection.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace knit_load {

endpoint resolve_endpoint(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    throw std::runtime_error("cannot resolve '" + host + "': " + ::gai_strerror(rc));
  }
  endpoint ep;
  std::memcpy(&ep.addr, res->ai_addr, res->ai_addrlen);
  ep.len = res->ai_addrlen;
  ::freeaddrinfo(res);
  return ep;
}

void client_connection::set_error_from_errno(const char* what) {
  error_ = std::string(what) + ": " + std::strerror(errno);
}

void client_connection::set_interest(std::uint32_t events) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = this;
  // Cannot fail for a registered, open fd; a failure would show up as a timeout anyway.
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd_, &ev);
}

void client_connection::close() {
  if (fd_ >= 0) ::close(fd_);  // closing also removes it from the epoll set
  fd_ = -1;
  state_ = connection_state::kDown;
  want_write_ = false;
  request_ = nullptr;
}

connection_event client_connection::connect(const endpoint& target, nanos now) {
  close();
  error_.clear();
  connect_started_at_ = now;
  fd_ = ::socket(target.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    set_error_from_errno("socket");
    return connection_event::kConnectFailed;
  }
  // Requests go out in one write, but a partial write must not wait for Nagle.
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&target.addr), target.len) < 0 &&
      errno != EINPROGRESS) {
    set_error_from_errno("connect");
    close();
    return connection_event::kConnectFailed;
  }
  epoll_event ev{};
  ev.events = EPOLLOUT;
  ev.data.ptr = this;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd_, &ev) < 0) {
    set_error_from_errno("epoll_ctl");
    close();
    return connection_event::kConnectFailed;
  }
  state_ = connection_state::kConnecting;
  return connection_event::kNone;
}

connection_event client_connection::send(const std::string& request, bool head_request,
                                         nanos intended, nanos now) {
  request_ = &request;
  written_ = 0;
  must_close_ = false;
  parser_.reset(head_request);
  intended_at_ = intended;
  sent_at_ = now;
  state_ = connection_state::kBusy;
  return flush();
}

connection_event client_connection::flush() {
  const std::string& req = *request_;
  while (written_ < req.size()) {
    const ssize_t n = ::send(fd_, req.data() + written_, req.size() - written_, MSG_NOSIGNAL);
    if (n > 0) {
      written_ += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // Only now pay for EPOLLOUT; the usual small request never gets here.
      if (!want_write_) set_interest(EPOLLIN | EPOLLOUT);
      want_write_ = true;
      return connection_event::kNone;
    }
    set_error_from_errno("send");
    return connection_event::kIoError;
  }
  if (want_write_) {
    set_interest(EPOLLIN);
    want_write_ = false;
  }
  return connection_event::kNone;
}

connection_event client_connection::on_event(std::uint32_t events, char* buf, std::size_t cap) {
  if (state_ == connection_state::kConnecting) {
    if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) == 0) return connection_event::kNone;
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0 || (events & (EPOLLERR | EPOLLHUP)) != 0) {
      error_ = std::string("connect: ") + std::strerror(err != 0 ? err : ECONNREFUSED);
      close();
      return connection_event::kConnectFailed;
    }
    // Level-triggered EPOLLIN only from here on: one recv per readiness, no EAGAIN probing.
    set_interest(EPOLLIN);
    state_ = connection_state::kIdle;
    return connection_event::kConnected;
  }
  if (state_ == connection_state::kDown) return connection_event::kNone;
  if ((events & EPOLLOUT) != 0 && want_write_ && state_ == connection_state::kBusy) {
    if (const connection_event ev = flush(); ev != connection_event::kNone) return ev;
  }
  if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0) return read_some(buf, cap);
  return connection_event::kNone;
}

connection_event client_connection::read_some(char* buf, std::size_t cap) {
  const ssize_t n = ::recv(fd_, buf, cap, 0);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return connection_event::kNone;
    set_error_from_errno("recv");
    return state_ == connection_state::kBusy ? connection_event::kIoError
                                             : connection_event::kPeerClosed;
  }
  if (state_ != connection_state::kBusy) {
    // An idle keep-alive connection closed by the server is normal; bytes nobody asked for
    // mean the stream is out of sync. Either way the connection is done.
    error_ = n == 0 ? "closed while idle" : "unsolicited bytes on idle connection";
    return connection_event::kPeerClosed;
  }
  if (n == 0) {
    if (parser_.finish_eof() == response_parser::feed_result::kComplete) {
      must_close_ = true;
      state_ = connection_state::kIdle;
      return connection_event::kResponse;
    }
    error_ = parser_.error();
    return connection_event::kIoError;
  }
  std::size_t consumed = 0;
  switch (parser_.feed(buf, static_cast<std::size_t>(n), consumed)) {
    case response_parser::feed_result::kNeedMore: return connection_event::kNone;
    case response_parser::feed_result::kError:
      error_ = parser_.error();
      return connection_event::kParseError;
    case response_parser::feed_result::kComplete: break;
  }
  // Extra bytes after the response (we never pipeline) or a response that arrived before the
  // request was fully written both leave the stream unusable for the next request.
  if (consumed < static_cast<std::size_t>(n) || want_write_) must_close_ = true;
  if (want_write_) {
    set_interest(EPOLLIN);
    want_write_ = false;
  }
  state_ = connection_state::kIdle;
  return connection_event::kResponse;
}

}  // namespace knit_load

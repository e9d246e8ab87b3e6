// A tiny single-threaded epoll HTTP/1.1 server: request framing and canned responses.
#include "tiny_http_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

namespace knit_load_test {
namespace {

struct accepted_connection {
  int fd = -1;
  std::string in;
  std::string out;
  std::size_t out_pos = 0;
  bool close_after_write = false;
  bool hung = false;
  bool want_write = false;
};

[[noreturn]] void throw_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

std::size_t content_length(std::string_view head) {
  // Case-insensitive search for the header name at the start of a line.
  std::size_t pos = 0;
  while ((pos = head.find("\r\n", pos)) != std::string_view::npos) {
    pos += 2;
    constexpr std::string_view kName = "content-length:";
    if (head.size() - pos < kName.size()) break;
    bool match = true;
    for (std::size_t i = 0; i < kName.size(); ++i) {
      char c = head[pos + i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (c != kName[i]) {
        match = false;
        break;
      }
    }
    if (!match) continue;
    std::size_t v = 0;
    for (std::size_t i = pos + kName.size(); i < head.size() && head[i] != '\r'; ++i) {
      if (head[i] >= '0' && head[i] <= '9') v = v * 10 + static_cast<std::size_t>(head[i] - '0');
    }
    return v;
  }
  return 0;
}

// Appends the response for `path` to c.out.
void respond(accepted_connection& c, std::string_view path) {
  if (path == "/hang") {
    c.hung = true;
  } else if (path == "/chunked") {
    c.out +=
        "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
        "5\r\nHello\r\n2;ext=1\r\n, \r\n6\r\nWorld!\r\n0\r\n\r\n";
  } else if (path == "/close") {
    c.out += "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 3\r\n\r\nbye";
    c.close_after_write = true;
  } else if (path.substr(0, 8) == "/status/" && path.size() == 11) {
    c.out += "HTTP/1.1 ";
    c.out += path.substr(8);
    c.out += " Whatever\r\ncontent-length: 6\r\n\r\nstatus";
  } else {
    c.out +=
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 13\r\n\r\nHello, World!";
  }
}

}  // namespace

tiny_http_server::tiny_http_server(std::uint16_t port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw_errno("socket");
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) throw_errno("bind");
  if (::listen(listen_fd_, 1024) < 0) throw_errno("listen");
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);

  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  stop_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || stop_fd_ < 0) throw_errno("epoll/eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.fd = stop_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, stop_fd_, &ev);
  thread_ = std::thread([this] { loop(); });
}

tiny_http_server::~tiny_http_server() {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t r = ::write(stop_fd_, &one, sizeof one);
  thread_.join();
  ::close(stop_fd_);
  ::close(epoll_fd_);
  ::close(listen_fd_);
}

void tiny_http_server::loop() {
  std::map<int, std::unique_ptr<accepted_connection>> clients;
  auto drop = [&](int fd) {
    ::close(fd);
    clients.erase(fd);
  };
  // Writes what is pending; returns false when the client is gone.
  auto flush = [&](accepted_connection& c) {
    while (c.out_pos < c.out.size()) {
      const ssize_t n =
          ::send(c.fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_pos += static_cast<std::size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!c.want_write) {
          epoll_event ev{};
          ev.events = EPOLLIN | EPOLLOUT;
          ev.data.fd = c.fd;
          ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
          c.want_write = true;
        }
        return true;
      } else {
        return false;
      }
    }
    c.out.clear();
    c.out_pos = 0;
    if (c.want_write) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = c.fd;
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
      c.want_write = false;
    }
    return !c.close_after_write;
  };

  epoll_event events[256];
  char buf[64 * 1024];
  while (true) {
    const int n = ::epoll_wait(epoll_fd_, events, 256, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == stop_fd_) {
        for (auto& [cfd, c] : clients) ::close(cfd);
        return;
      }
      if (fd == listen_fd_) {
        while (true) {
          const int cfd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (cfd < 0) break;
          const int one = 1;
          ::setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          epoll_event ev{};
          ev.events = EPOLLIN;
          ev.data.fd = cfd;
          ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, cfd, &ev);
          auto c = std::make_unique<accepted_connection>();
          c->fd = cfd;
          clients[cfd] = std::move(c);
        }
        continue;
      }
      auto it = clients.find(fd);
      if (it == clients.end()) continue;
      accepted_connection& c = *it->second;
      if ((events[i].events & EPOLLOUT) != 0 && !flush(c)) {
        drop(fd);
        continue;
      }
      if ((events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) == 0) continue;
      const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
      if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        drop(fd);
        continue;
      }
      if (r < 0) continue;
      if (c.hung) continue;  // a hung connection ignores everything that follows
      c.in.append(buf, static_cast<std::size_t>(r));
      std::size_t pos = 0;
      while (!c.hung && !c.close_after_write) {
        const std::size_t head_end = c.in.find("\r\n\r\n", pos);
        if (head_end == std::string::npos) break;
        const std::string_view head(c.in.data() + pos, head_end - pos);
        const std::size_t total = head_end + 4 - pos + content_length(head);
        if (c.in.size() - pos < total) break;
        const std::size_t sp1 = head.find(' ');
        const std::size_t sp2 = head.find(' ', sp1 + 1);
        respond(c, sp1 == std::string_view::npos ? std::string_view{}
                                                 : head.substr(sp1 + 1, sp2 - sp1 - 1));
        if (!c.hung) served_.fetch_add(1, std::memory_order_relaxed);
        pos += total;
      }
      c.in.erase(0, pos);
      if (!c.out.empty() && !c.want_write && !flush(c)) drop(fd);
    }
  }
}

}  // namespace knit_load_test

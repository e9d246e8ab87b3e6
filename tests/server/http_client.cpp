// The test client: send raw bytes, parse Content-Length framed responses, tell a clean close
// from a lost response.
#include "http_client.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace knit_test {

const char* to_string(read_outcome outcome) {
  switch (outcome) {
    case read_outcome::complete: return "complete";
    case read_outcome::closed_cleanly: return "closed_cleanly";
    case read_outcome::partial: return "partial";
    case read_outcome::timed_out: return "timed_out";
    case read_outcome::malformed: return "malformed";
  }
  return "?";
}

std::string make_request(std::string_view method, std::string_view target, std::string_view body,
                         std::string_view extra, bool close) {
  std::string r;
  r.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  if (!body.empty() || method == "POST") {
    r.append("Content-Type: application/json\r\nContent-Length: ")
        .append(std::to_string(body.size()))
        .append("\r\n");
  }
  r.append(extra);
  if (close) r.append("Connection: close\r\n");
  r.append("\r\n").append(body);
  return r;
}

connection::connection(std::uint16_t port, std::chrono::milliseconds timeout) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

connection::~connection() {
  if (fd_ >= 0) ::close(fd_);
}

bool connection::send(std::string_view data) {
  if (fd_ < 0) return false;
  while (!data.empty()) {
    // MSG_NOSIGNAL: a closed connection is an outcome to check, not a SIGPIPE to die of.
    const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

void connection::shutdown_send() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

int connection::fill() {
  char chunk[16384];
  for (;;) {
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n > 0) {
      buffer_.append(chunk, static_cast<std::size_t>(n));
      return 1;
    }
    if (n == 0) return 0;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return -1;
    return 0;  // ECONNRESET and friends: the connection is over
  }
}

read_outcome connection::read_response(http_response& out, bool head_request) {
  if (fd_ < 0) return read_outcome::closed_cleanly;
  out = http_response{};

  // The head: up to the blank line.
  std::size_t end_of_head;
  while ((end_of_head = buffer_.find("\r\n\r\n")) == std::string::npos) {
    const int r = fill();
    if (r < 0) return read_outcome::timed_out;
    if (r == 0) return buffer_.empty() ? read_outcome::closed_cleanly : read_outcome::partial;
  }
  const std::string head = buffer_.substr(0, end_of_head);

  // Status line: HTTP/1.1 200 OK
  const std::size_t line_end = head.find("\r\n");
  const std::string status_line = head.substr(0, line_end);
  if (status_line.rfind("HTTP/1.1 ", 0) != 0 || status_line.size() < 12) {
    return read_outcome::malformed;
  }
  out.status = std::atoi(status_line.c_str() + 9);

  // Header fields.
  std::size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
  while (pos < head.size()) {
    std::size_t next = head.find("\r\n", pos);
    if (next == std::string::npos) next = head.size();
    const std::string line = head.substr(pos, next - pos);
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) return read_outcome::malformed;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::size_t v = colon + 1;
    while (v < line.size() && line[v] == ' ') ++v;
    out.headers[name] = line.substr(v);
    pos = next + 2;
  }

  // The body: exactly Content-Length bytes (HEAD: none).
  const std::string length = out.header("content-length");
  if (length.empty()) return read_outcome::malformed;
  const std::size_t body_size = head_request ? 0 : std::strtoul(length.c_str(), nullptr, 10);
  const std::size_t total = end_of_head + 4 + body_size;
  while (buffer_.size() < total) {
    const int r = fill();
    if (r < 0) return read_outcome::timed_out;
    if (r == 0) return read_outcome::partial;
  }
  out.body = buffer_.substr(end_of_head + 4, body_size);
  buffer_.erase(0, total);
  return read_outcome::complete;
}

std::optional<http_response> connection::exchange(std::string_view raw, bool head_request) {
  if (!send(raw)) return std::nullopt;
  http_response res;
  if (read_response(res, head_request) != read_outcome::complete) return std::nullopt;
  return res;
}

std::optional<http_response> connection::request(std::string_view method, std::string_view target,
                                                 std::string_view body) {
  return exchange(make_request(method, target, body), method == "HEAD");
}

std::optional<std::string> connection::read_until(std::string_view delimiter) {
  if (fd_ < 0) return std::nullopt;
  std::size_t at;
  while ((at = buffer_.find(delimiter)) == std::string::npos) {
    if (fill() <= 0) return std::nullopt;
  }
  std::string out = buffer_.substr(0, at + delimiter.size());
  buffer_.erase(0, at + delimiter.size());
  return out;
}

bool connection::wait_closed(std::string* received) {
  if (fd_ < 0) return true;
  for (;;) {
    const int r = fill();
    if (r == 0) break;
    if (r < 0) return false;
  }
  if (received) *received = buffer_;
  return true;
}

bool connection::readable_now() const {
  if (!buffer_.empty()) return true;
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

}  // namespace knit_test

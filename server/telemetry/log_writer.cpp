// The non-blocking line writer: chooses a way to write per kind of file, then writes, keeps one
// line's remainder, or drops.
#include "telemetry/log_writer.hpp"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace knit_server {

log_writer::log_writer(int fd) : fd_(fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    method_ = method::guarded;  // unknown: at least never block
    return;
  }
  if (S_ISSOCK(st.st_mode)) {
    method_ = method::socket;
  } else if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    const int own = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (own >= 0) {
      fd_ = own;
      owned_ = true;
      method_ = method::reopened;
    } else {
      method_ = method::guarded;
    }
  }
  // Regular files, block devices: plain.
}

log_writer::~log_writer() {
  if (owned_) ::close(fd_);
}

std::size_t log_writer::write_some(const char* data, std::size_t size) noexcept {
  if (method_ == method::guarded) {
    pollfd p{fd_, POLLOUT, 0};
    if (::poll(&p, 1, 0) != 1 || (p.revents & POLLOUT) == 0 || (p.revents & (POLLERR | POLLHUP))) {
      return 0;
    }
    if (size > PIPE_BUF) size = PIPE_BUF;  // room for PIPE_BUF bytes is what POLLOUT promises
  }
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = method_ == method::socket
                          ? ::send(fd_, data + done, size - done, MSG_DONTWAIT | MSG_NOSIGNAL)
                          : ::write(fd_, data + done, size - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      if (method_ == method::guarded) break;  // poll promised one write's worth, no more
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // EAGAIN (full), EPIPE (reader gone), anything else: stop here
  }
  return done;
}

bool log_writer::flush_rest() noexcept {
  while (!rest_.empty()) {
    const std::size_t n = write_some(rest_.data(), rest_.size());
    if (n == 0) return false;
    rest_.erase(0, n);
  }
  return true;
}

void log_writer::write_line(std::string_view line) noexcept {
  const std::lock_guard guard(mutex_);
  try {
    if (!flush_rest()) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    std::string whole;
    whole.reserve(line.size() + 1);
    whole.append(line);
    whole.push_back('\n');
    std::size_t sent = 0;
    while (sent < whole.size()) {
      const std::size_t n = write_some(whole.data() + sent, whole.size() - sent);
      if (n == 0) break;
      sent += n;
    }
    if (sent == 0) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
    } else if (sent < whole.size()) {
      rest_.assign(whole, sent, std::string::npos);
    }
  } catch (...) {
    dropped_.fetch_add(1, std::memory_order_relaxed);  // out of memory building the line
  }
}

}  // namespace knit_server

// The library's log sink (knit/log.hpp) and how src/ says a line (log_line.hpp).
#include "knit/log.hpp"

#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "log_line.hpp"

namespace knit {
namespace detail {
namespace {

// The sink and its lock. Never destroyed: the process workers' output thread outlives every
// static destructor (child_output.hpp), and a pool destroyed by one may still say a line.
struct sink_state {
  std::shared_mutex mutex;  // shared: a call into the sink; exclusive: set_log_sink
  log_sink sink;            // empty: stderr
};

sink_state& state() {
  static sink_state* const s = new sink_state;  // never deleted (above)
  return *s;
}

// Whether stderr took nothing for 100 ms at the last line: then it is not waited for again
// until it can take one (knit/log.hpp). Relaxed: a hint between writers, it guards no data.
std::atomic<bool> stderr_stuck{false};

// The default sink: the line and its newline to fd 2 as one writev (lines from several
// threads do not interleave), once poll says fd 2 can take it.
void write_stderr(std::string_view line) noexcept {
  pollfd p{STDERR_FILENO, POLLOUT, 0};
  const int r = ::poll(&p, 1, stderr_stuck.load(std::memory_order_relaxed) ? 0 : 100);
  const bool stuck = !(r == 1 && (p.revents & POLLOUT) && !(p.revents & (POLLERR | POLLNVAL)));
  stderr_stuck.store(stuck, std::memory_order_relaxed);
  if (stuck) return;
  char newline = '\n';
  iovec parts[2] = {{const_cast<char*>(line.data()), line.size()}, {&newline, 1}};
  iovec* next = parts;
  int left = 2;
  while (left > 0) {
    const ssize_t w = ::writev(STDERR_FILENO, next, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    auto done = static_cast<std::size_t>(w);
    while (left > 0 && done >= next->iov_len) {
      done -= next->iov_len;
      ++next;
      --left;
    }
    if (left > 0) {
      next->iov_base = static_cast<char*>(next->iov_base) + done;
      next->iov_len -= done;
    }
  }
}

}  // namespace

void log_line(std::string_view line) noexcept {
  try {
    sink_state& s = state();
    std::shared_lock lock(s.mutex);
    if (!s.sink) return write_stderr(line);
    s.sink(line);
  } catch (...) {
    write_stderr(line);  // the sink threw (or no memory for the state): the line still goes
  }
}

void log_format(const char* format, ...) noexcept {
  char text[1024];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  if (n < 0) return;
  log_line(std::string_view(text, std::min(static_cast<std::size_t>(n), sizeof text - 1)));
}

}  // namespace detail

void set_log_sink(log_sink sink) {
  detail::sink_state& s = detail::state();
  log_sink previous;
  {
    // Exclusive: waits until no line is inside the previous sink.
    std::unique_lock lock(s.mutex);
    previous = std::exchange(s.sink, std::move(sink));
  }
}  // previous is destroyed here, outside the lock

}  // namespace knit

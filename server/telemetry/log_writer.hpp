// Writes whole lines to stdout or stderr without ever blocking the event loop; what cannot be
// written now is dropped and counted.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace knit_server {

// The server's log and knit-stats lines go through one of these. Any thread may write: in
// KNIT_MODE=multi every io thread may report an error in its event loop (main.cpp). A mutex
// keeps lines whole and rest_ consistent; lines are rare, never on a request's path.
//
// A plain write() to stdout blocks when stdout is a pipe nobody reads (and once the pipe is
// full, the event loop would stop), and kills the process with SIGPIPE when the reader has
// gone (main() ignores SIGPIPE; here it becomes EPIPE, a dropped line). So each write must
// be non-blocking, without changing the file for anyone else:
//
//   - O_NONBLOCK is a property of the open file description, which a pipe's writer shares
//     with every process that inherited it (the shell, a supervisor, a sibling). Setting it
//     on our fd 1 would make *their* writes fail with EAGAIN. So we never set it on the
//     inherited fd.
//   - pipe, FIFO, terminal: open("/proc/self/fd/N", O_WRONLY | O_NONBLOCK) gives the same
//     pipe (or tty) through a new file description that is ours alone; that one is made
//     non-blocking. (This open fails with ENXIO when the pipe has no reader left, or when
//     /proc is missing; then each write is guarded by poll(POLLOUT, timeout 0) and limited
//     to PIPE_BUF bytes, which a pipe with room takes without blocking.)
//   - socket: send(MSG_DONTWAIT | MSG_NOSIGNAL), non-blocking per call.
//   - regular file (or anything else): write() as is; a file never waits for a reader.
//
// A line is written whole or not at all when it can be: if nothing of it fits, it is
// dropped and counted; if part of it went out, the rest is kept and sent before the next
// line (or that next line is dropped if the rest still does not fit), so lines are never
// interleaved mid-line. At most one line's remainder is kept.
class log_writer {
 public:
  // `fd` (1 or 2) stays open and owned by the process; a reopened description is ours.
  explicit log_writer(int fd);
  ~log_writer();

  log_writer(const log_writer&) = delete;
  log_writer& operator=(const log_writer&) = delete;

  // Writes `line` and a newline, or drops it. Never blocks, never throws.
  void write_line(std::string_view line) noexcept;

  // Lines dropped so far (would have blocked, or the reader is gone).
  std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

 private:
  enum class method : std::uint8_t { plain, reopened, guarded, socket };

  // Writes as much of [data, data+size) as goes without blocking; returns the byte count
  // (0 when nothing went, including on error).
  std::size_t write_some(const char* data, std::size_t size) noexcept;
  // Sends the kept remainder of a line; true when nothing is left of it.
  bool flush_rest() noexcept;

  int fd_;              // where lines go: the inherited fd, or our reopened one
  bool owned_ = false;  // fd_ is our reopened description: close it
  method method_ = method::plain;
  std::mutex mutex_;  // held by write_line: guards rest_ and the writes themselves
  std::string rest_;  // the unsent end of a partly written line
  // Incremented under mutex_; partner: the relaxed load in dropped(), from any thread.
  std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace knit_server

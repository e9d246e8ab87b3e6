// Runs the real knit-server binary as a child process on a free port, for end-to-end tests.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace knit_test {

using namespace std::chrono_literals;

// In `env`, not a variable: the child installs refuse_io_uring() before it execs, so that
// io_uring_setup fails with EPERM in the server (KNIT_IO's fallback).
inline constexpr std::string_view kRefuseIoUring = "@refuse-io_uring";

// One knit-server child. The environment is the test's own minus every variable the server
// reads (so a developer's KNIT_THREADS cannot change a test), plus `env`. PORT defaults to
// 0 (the server binds a port the kernel picks; port() is that port once wait_listening
// returned true) and JWT_SECRET to a fixed test secret unless `env` sets them.
// stdout is a pipe (the tests read the banner and knit-stats lines); stderr goes to a file.
// The destructor kills a child that is still running (SIGKILL), so a failed test never
// leaves a server behind.
class server_process {
 public:
  explicit server_process(std::map<std::string, std::string> env = {});
  ~server_process();

  server_process(const server_process&) = delete;
  server_process& operator=(const server_process&) = delete;

  // Waits for "listening on ..." on stdout. False if the child exits or prints nothing
  // within the deadline; stderr_text() then says why.
  bool wait_listening(std::chrono::milliseconds deadline = 15s);

  // The next stdout line (without '\n'), or nullopt at the deadline or end of output.
  std::optional<std::string> read_line(std::chrono::milliseconds deadline = 10s);

  // Closes our end of the child's stdout pipe: the child's next write to stdout finds no
  // reader (EPIPE, or SIGPIPE if it does not ignore it). read_line returns nullopt after.
  void close_stdout();

  // Sends a signal to the child (by PID).
  void signal(int signo) const;

  // Waits for the child to exit and returns its exit code, or -1 at the deadline or when it
  // died from a signal. At the deadline the child is killed.
  int wait_exit(std::chrono::milliseconds deadline = 20s);

  // SIGTERM, then wait_exit.
  int stop(std::chrono::milliseconds deadline = 20s);

  bool running() const { return pid_ > 0; }
  // The port the server listens on: PORT as given, or (PORT unset) the one it bound, read
  // by wait_listening (0 before that).
  std::uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string stdout_seen() const { return stdout_seen_; }  // every stdout line read so far
  std::string stderr_text() const;                          // all of stderr so far

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string stderr_path_;
  std::string pending_;  // stdout bytes read but not yet returned as a line
  std::string stdout_seen_;
  std::uint16_t port_ = 0;
};

}  // namespace knit_test

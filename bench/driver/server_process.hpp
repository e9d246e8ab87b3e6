// One knit-server for one case: start it on a free port, prove it is the process we
// meant, wait until it serves, ask it for stats, and stop it by PID.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "driver/server_stats.hpp"

namespace knit::bench {

// A case cannot be measured (the run goes on with the next case).
struct case_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The machine is in a state where no further case can be trusted (port stuck busy).
struct fatal_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct server_options {
  std::string exe;                          // knit-server binary
  std::vector<std::string> args;            // extra argv after argv[0] (fakes in tests)
  std::map<std::string, std::string> env;   // exactly what the case sets (server_env())
  std::string host = "127.0.0.1";
  int port = 3000;
  std::vector<int> cpus;                    // affinity, set in the child before exec
  std::string log_path;                     // the server's stdout+stderr
  double ready_timeout_s = 20;
  double stop_grace_s = 5;
  double port_free_timeout_s = 10;
};

class server_process {
 public:
  // (1) the port must be free, (2) fork/exec, (3) identity from /proc, (4) readiness:
  // the "listening on" line plus a TCP connect, then the PID must own the listener.
  // Throws case_error (the server, if started, is stopped again first).
  explicit server_process(server_options opts);
  ~server_process();
  server_process(const server_process&) = delete;
  server_process& operator=(const server_process&) = delete;

  pid_t pid() const { return pid_; }
  const std::vector<std::string>& argv() const { return argv_; }
  bool running() const { return pid_ > 0; }

  // SIGUSR1, then waits for a new "knit-stats {json}" line in the log.
  std::optional<server_stats> request_stats(double timeout_s = 3.0);

  // Throws case_error if the server died on its own (checked between phases).
  void check_alive(const char* phase);

  // SIGTERM, SIGKILL after the grace period, waitpid, then wait for the port to be
  // free. Returns a note when the exit was not clean; throws fatal_error if the port
  // stays busy, because every later case would then fail its port check anyway.
  std::string stop();

 private:
  void wait_ready();
  std::vector<std::string> new_log_lines();

  server_options opts_;
  std::vector<std::string> argv_;
  pid_t pid_ = -1;
  long log_offset_ = 0;
  std::string partial_;  // an unterminated last line, kept until its newline arrives
};

// Text of the first line in `log_text` that starts with "listening on", or "".
std::string find_listening_line(const std::string& log_text);

}  // namespace knit::bench

// The server under test for one case, knit-server or an external peer (nginx, the
// reference server, any server of these routes): start it on a free port, prove it is the
// process (tree) we meant, wait until it serves, ask knit-server for stats, stop it by PID.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "driver/run/server_stats.hpp"
#include "driver/system/process_tree.hpp"

namespace knit::bench {

// A case cannot be measured (the run goes on with the next case).
struct case_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The machine is in a state where no further case can be trusted (port stuck busy).
struct fatal_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What makes a started server ready, and how it is checked and stopped.
enum class server_kind {
  // knit-server: exec'd directly; its /proc identity must match; ready once it printed
  // "listening on" and accepts a connection; the PID must own the listener; answers
  // SIGUSR1 with a knit-stats line; stopped by PID.
  knit_server,
  // An external peer: /bin/sh -c COMMAND in a process group of its own; ready once it
  // accepts a connection; the listener must belong to the shell's tree; never signalled
  // for stats (SIGUSR1 means something else to other servers); the whole tree is stopped.
  peer,
};

struct process_options {
  server_kind kind = server_kind::knit_server;
  std::string exe;                         // knit_server: the binary
  std::vector<std::string> args;           // knit_server: argv after argv[0] (fakes in tests)
  std::string name;                        // peer: for messages, "peer nginx"
  std::string command;                     // peer: already substituted ({port}, {host})
  std::map<std::string, std::string> env;  // exactly what the case sets (server_env())
  std::string host = "127.0.0.1";
  int port = 3000;
  std::vector<int> cpus;  // affinity, set in the child before exec
  std::string log_path;   // stdout+stderr (of the whole tree, for a peer)
  double ready_timeout_s = 20;
  double stop_grace_s = 5;
  double port_free_timeout_s = 10;
  // peer: stop it by a SIGTERM to the root alone, and the rest of the tree only if that has
  // not ended it within stop_grace_s. For a root that stops its own children in order (a
  // fleet: HAProxy first, then each knit-server with its drain): a SIGTERM to the whole tree
  // would reach each knit-server twice, and a second SIGTERM means "exit now" (code 1).
  bool root_stops_tree = false;
};

class case_process {
 public:
  // (1) the port must be free, (2) fork/exec, (3) readiness and identity as its kind
  // says. Throws case_error (the server, if started, is stopped again first).
  explicit case_process(process_options opts);
  ~case_process();
  case_process(const case_process&) = delete;
  case_process& operator=(const case_process&) = delete;

  // knit-server's PID, or the peer's shell: the tree's root and its group's leader.
  pid_t pid() const { return pid_; }
  const std::vector<std::string>& argv() const { return argv_; }
  bool running() const { return pid_ > 0; }

  // knit-server: SIGUSR1, then waits for a new "knit-stats {json}" line in the log.
  // A peer: nothing, never signalled.
  std::optional<server_stats> request_stats(double timeout_s = 3.0);

  // Throws case_error if the server (the peer's root) exited on its own (checked between
  // phases).
  void check_alive(const char* phase);

  // knit-server: SIGTERM, SIGKILL after the grace period, waitpid. A peer: SIGTERM to the
  // group and to every process of the tree, SIGKILL to whatever is left after the grace
  // period. Then wait for the port to be free. Returns a note when the exit was not clean;
  // throws fatal_error if something survives SIGKILL or the port stays busy, because
  // every later case would then fail its port check anyway.
  std::string stop();

 private:
  bool is_peer() const { return opts_.kind == server_kind::peer; }
  std::string who() const;
  void start();
  void wait_server_ready();
  void wait_peer_ready();
  void check_listener();
  std::string stop_server();
  std::string stop_tree();
  void wait_port_free(const std::string& after);
  std::vector<std::string> new_log_lines();

  process_options opts_;
  std::vector<std::string> argv_;
  pid_t pid_ = -1;
  pid_t pgid_ = -1;               // peer: the group spawn_process made (== the shell's PID)
  std::vector<proc_entry> seen_;  // peer: every process of the tree seen, to stop even orphans
  long log_offset_ = 0;
  std::string partial_;  // an unterminated last line, kept until its newline arrives
};

// Text of the first line in `log_text` that starts with "listening on", or "".
std::string find_listening_line(const std::string& log_text);

}  // namespace knit::bench

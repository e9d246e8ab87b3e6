// One external peer (nginx, the seed's Bun app, any server of these routes) for one
// case: run its command under /bin/sh, wait until it accepts connections, prove the
// listener is its own, measure its whole process tree, stop the tree.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "driver/process_tree.hpp"
#include "driver/server_process.hpp"

namespace knit::bench {

struct peer_options {
  std::string name;                        // for messages: "peer nginx"
  std::string command;                     // already substituted ({port}, {host})
  std::map<std::string, std::string> env;  // PORT, HOST and the case's env (server_env())
  std::string host = "127.0.0.1";
  int port = 3000;
  std::vector<int> cpus;                   // affinity of the shell, inherited by all it starts
  std::string log_path;                    // the tree's stdout+stderr
  double ready_timeout_s = 10;
  double stop_grace_s = 5;
  double port_free_timeout_s = 10;
};

class peer_process {
 public:
  // (1) the port must be free, (2) /bin/sh -c COMMAND in a process group of its own,
  // (3) ready: a TCP connect within ready_timeout_s, (4) every listener on the port
  // belongs to the shell or a process it started. Throws case_error naming the peer
  // (the tree, if started, is stopped first).
  explicit peer_process(peer_options opts);
  ~peer_process();
  peer_process(const peer_process&) = delete;
  peer_process& operator=(const peer_process&) = delete;

  pid_t pid() const { return pid_; }  // the shell: the tree's root and its group's leader
  const std::vector<std::string>& argv() const { return argv_; }

  // Throws case_error when the root process has exited (checked between phases).
  void check_alive(const char* phase);

  // SIGTERM to the group and to every process of the tree, SIGKILL to whatever is left
  // after the grace period, then wait for the port to be free. Returns a note when the
  // exit was not clean; fatal_error when something survives SIGKILL or the port stays busy.
  std::string stop();

 private:
  void wait_ready();

  peer_options opts_;
  std::vector<std::string> argv_;
  pid_t pid_ = -1;
  pid_t pgid_ = -1;  // the group spawn_process made (== the shell's PID); outlives a reaped root
  std::vector<proc_entry> seen_;  // every process of the tree seen so far, to stop even orphans
};

}  // namespace knit::bench

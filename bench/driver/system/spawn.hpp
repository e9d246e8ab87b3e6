// Child processes without a shell: fork/execve with a set environment, CPU affinity
// and output to a file; waiting, and stopping by PID (never by name).
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace knit::bench {

struct spawn_spec {
  std::string exe;                // path executed directly with execve; no shell, no PATH search
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // complete environment, "NAME=value"
  std::string output_path;        // stdout and stderr appended here; "" = /dev/null
  std::vector<int> cpus;          // sched_setaffinity before exec; empty = inherit
  bool die_with_parent = true;    // PR_SET_PDEATHSIG: a crashed driver leaves no server behind
};

// Starts the child and returns its PID: the PID of the program itself, since we exec
// directly (the reference benchmark recorded a setsid shell's PID and then stopped the wrong
// process). Returns only after exec succeeded AND the kernel has laid out the new program's
// argument and environment strings, so /proc/PID/{exe,cmdline,environ} show the new program the
// moment this returns; an exec failure throws with the child's errno.
pid_t spawn_process(const spawn_spec& spec);

struct exit_status {
  bool exited = false;  // normal exit (code valid)
  int code = 0;
  int signal = 0;  // terminating signal when !exited
  std::string text() const;
};

// Reaps the child if it has exited; nullopt while it is still running.
std::optional<exit_status> reap_nohang(pid_t pid);
// Waits up to timeout_s for the child to exit.
std::optional<exit_status> wait_exit(pid_t pid, double timeout_s);

// SIGTERM, wait up to grace_s, then SIGKILL and wait. `killed` says whether SIGKILL was needed.
exit_status stop_process(pid_t pid, double grace_s, bool* killed = nullptr);

// This process's environment minus variables the driver controls (any KNIT_*, PORT,
// HOST, JWT_SECRET), plus `set`. A stray KNIT_SPIN exported in the caller's shell
// must not leak into a case that means to leave it unset.
std::vector<std::string> child_environment(const std::map<std::string, std::string>& set);

// Runs argv[0] (looked up in PATH) and returns its stdout, or nullopt if it could not run.
std::optional<std::string> capture_output(const std::vector<std::string>& argv);

// Full path of an executable found in PATH, or "".
std::string find_in_path(const std::string& name);

}  // namespace knit::bench

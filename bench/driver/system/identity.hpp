// Asserts from /proc that a PID is the server we started: binary, command line,
// environment, and ownership of the listening socket.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace knit::bench {

struct expected_identity {
  std::string exe;                         // the binary we exec'd (compared after realpath)
  std::vector<std::string> argv;           // expected /proc/PID/cmdline
  std::map<std::string, std::string> env;  // every KNIT_* plus PORT/HOST we set
};

// Empty when everything matches; otherwise one line per mismatch. The reference benchmark's first
// harness measured one stale process six times while labelling it six configurations,
// so every mismatch is fatal to the case.
std::vector<std::string> check_process_identity(pid_t pid, const expected_identity& expected);

// Empty when `pid` holds every LISTEN socket on `port` (and at least one): a second
// listener (an old server with SO_REUSEPORT, say) would take part of our load.
std::vector<std::string> check_socket_owner(pid_t pid, int port);

// The same for a process tree (an external peer: nginx's master and workers all hold
// the listener): every LISTEN socket on `port` must belong to one of `pids`.
std::vector<std::string> check_socket_owner(const std::vector<pid_t>& pids, int port,
                                            const std::string& who);

// Raw readers, exposed for diagnostics and tests. nullopt when unreadable.
std::optional<std::string> read_exe(pid_t pid);
std::optional<std::vector<std::string>> read_cmdline(pid_t pid);
std::optional<std::map<std::string, std::string>> read_environ(pid_t pid);
// Inodes of the sockets this process has open, from /proc/PID/fd/* -> "socket:[N]".
std::vector<unsigned long> socket_inodes(pid_t pid);

// Canonical path of a file (realpath), or the input if it does not resolve.
std::string canonical_path(const std::string& path);

}  // namespace knit::bench

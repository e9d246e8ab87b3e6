// Confining a strict child: the host made undumpable, and the child spawned in new user, PID,
// mount and network namespaces (spawn.hpp says when; current_confinement reports it).
//
// Why each:
//   - host undumpable (PR_SET_DUMPABLE 0, process-wide, once, before the first strict child):
//     /proc/<host>/mem and /proc/<host>/environ then need CAP_SYS_PTRACE in the host's user
//     namespace, which a child never holds (a new user namespace gives capabilities only in
//     itself; a root child without namespaces has its capabilities dropped by the sandbox).
//     Without it a same-uid child reads them with a read-only open, which the filter allows.
//     Side effects, accepted for strict hosts only: no core dump of the host, and a debugger
//     or profiler of the same uid needs CAP_SYS_PTRACE to attach to it.
//   - PID namespace: the host has no pid there, so no fcntl(F_SETOWN), kill or /proc path
//     of the child's can name it. The child is its namespace's init: a signal it sends itself
//     without a handler is ignored (raise, kill), a fault still kills it, and glibc's abort()
//     ends in a fault (SIGSEGV, not SIGABRT, in the host's report); SIGKILL from the host, and
//     PDEATHSIG, come from outside the namespace and always work.
//   - mount namespace: a fresh proc on /proc (mounted by the child before its exec, while it
//     still holds the new user namespace's capabilities), so the host's pids are not listed;
//     depth, not the main defence: a /proc partly covered (some containers) refuses it, and
//     the child goes on with the host's (private_proc_not says so).
//   - network namespace: no interface but a down loopback (depth: the filter refuses socket).
//   - user namespace: owns the others (no privilege needed); no uid map is written, so after
//     its exec the child is "nobody" inside with no capability at all, even in its namespace.
// How (spawn_in_namespaces): glibc's clone() with CLONE_VM | CLONE_VFORK | CLONE_PIDFD and the
// namespace flags, on a stack of its own, as posix_spawn does: no copy of the host's page
// tables (a fork of a large host would cost milliseconds) and the calling thread waits only
// until the exec. Between clone and exec the child shares the host's memory and runs only raw
// system calls (no glibc state, no sanitizer interceptor): signal dispositions and mask as
// posix_spawn leaves them, the mounts, the fds, execve, else exit_group(127).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstddef>
#include <string>

#include "process/unique_fd.hpp"

namespace knit::detail {

// What the child gets (spawn.hpp): fds 0, 1 and 2 from stdin_fd and output_fd, and `kept`
// under their own numbers. Every fd given must be above 2.
struct spawn_plan {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int stdin_fd = -1;
  int output_fd = -1;
  const int* kept = nullptr;
  std::size_t kept_count = 0;
};

// The signals a child starts with at their default action whatever the host did with them
// (a server ignores SIGPIPE, handles SIGINT); none is blocked.
inline constexpr int reset_signals[] = {SIGPIPE, SIGINT,  SIGTERM, SIGHUP,
                                        SIGCHLD, SIGUSR1, SIGUSR2};

// Makes the host undumpable, once per process (above).
void make_host_undumpable();

// Spawns plan.path in new namespaces. Returns its pid with `pidfd` set, or 0 when this
// kernel refuses the namespaces (EPERM, ENOSYS, EINVAL, ENOSPC, EUSERS): remembered, and
// every later call returns 0 at once (the caller falls back to posix_spawn). Throws
// process_error(worker_start_failed) on any other failure (the exec's included).
pid_t spawn_in_namespaces(const spawn_plan& plan, unique_fd& pidfd);

// Records the namespaces as refused for this process, `why` (a benchmark's comparison of the
// spawn's cost without them: knit-spawn-cost --no-namespaces).
void refuse_namespaces(const std::string& why);

}  // namespace knit::detail

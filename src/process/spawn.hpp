// Spawning one process worker: the region, the bells, the host-alive pipe and the output
// pipe, then the child itself, never with fork() (the host has threads, and a forked child of
// a threaded process may call only async-signal-safe functions until exec).
//   strict sandbox: in new user, PID, mount and network namespaces (namespaces.hpp: clone
//     with CLONE_VM | CLONE_VFORK, as posix_spawn does, plus the namespace flags), falling
//     back to posix_spawn, remembered process-wide, where the kernel or a service manager
//     refuses them (current_confinement says why). The host makes itself undumpable first.
//   otherwise: posix_spawn.
// What the child gets, and nothing else of the host's (every other fd is CLOEXEC or closed
// by the child, close_other_fds in child_loop.cpp):
//   fd 0       /dev/null, read-only
//   fd 1, 2    the write end of a pipe of its own, whose read end only the host holds: the
//              forwarder (child_output.hpp) copies it to the host's stderr, line by line,
//              bounded. Never the host's stdio: a task could otherwise change the open
//              file the host writes to (O_NONBLOCK, O_ASYNC with F_SETOWN aimed at the
//              host), or fill it under the host.
//   the protocol's fds (shared_region.hpp), with the host's numbers, CLOEXEC cleared:
//     exe --knit-process-worker NUMBER HOST_PID MEMFD REQUEST_FD ANSWER_FD ALIVE_FD ARENA_BYTES
//   REQUEST_FD is the read end of the request pipe (the host keeps the write end), ANSWER_FD
//   the answer eventfd, ALIVE_FD the read end of the alive pipe. HOST_PID is the host's pid
//   in its own PID namespace (the child, in a new one, cannot see it there).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "knit/process.hpp"
#include "process/child_end.hpp"
#include "process/shared_region.hpp"
#include "process/unique_fd.hpp"

namespace knit::detail {

inline constexpr std::string_view worker_marker = "--knit-process-worker";
// The exit code of a worker process whose program reached a start of worker processes
// instead of knit::worker_main (it would start children of its own, and they theirs: a fork
// storm). spawn_child stops it there; the host's start failure names the cause.
inline constexpr int exit_no_worker_main = 123;
inline constexpr int worker_argc = 9;

// A started child as its host holds it. Destroying it does not stop the child: its owner
// kills and reaps it (end_child, starter.hpp).
struct child_process {
  pid_t pid = -1;
  std::uint64_t id = 0;  // the starter's name for it (0: not started by the starter)
  // Its end, shared with the starter's watch (child_end.hpp): who reaps it, and how it ended.
  std::shared_ptr<child_end> end = std::make_shared<child_end>();
  unique_fd pidfd;    // readable once the child has ended; waitid(P_PIDFD) reaps it
  unique_fd request;  // host -> child: the request pipe's write end (O_NONBLOCK), the host's only
  // The request pipe's read end, kept open by the host and never read: the pipe always has
  // a reader, so a ring after the child died (or closed its end on purpose) is a write that
  // succeeds or answers EAGAIN, never EPIPE with the SIGPIPE that kills a host that does not
  // ignore it.
  unique_fd request_reader;
  unique_fd answer;  // child -> host eventfd (the host never reads or writes it on a call)
  unique_fd alive;   // the pipe's write end: closing it (or the host's death) ends the child
  shared_region region;
};

// How the host confines its strict children (knit::process_confinement, the public
// snapshot: one record, not a copy of it).
using confinement = knit::process_confinement;
confinement current_confinement();

// Spawns knit-proc-`number` with a mapping of `lanes` lanes (shared_region.hpp), whose
// waits spin for spin_ns (slot_bell.hpp). Throws process_error(worker_start_failed).
child_process spawn_child(const std::string& executable, unsigned number, std::size_t arena_bytes,
                          unsigned lanes, std::uint64_t spin_ns, const region_sandbox& sandbox);

}  // namespace knit::detail

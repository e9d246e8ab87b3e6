// Spawning one process worker: the region, the eventfds and the host-alive pipe, then
// posix_spawn of the worker executable (never fork(): the host has threads, and a forked
// child of a threaded process may call only async-signal-safe functions until exec).
// The child's argv (worker_main reads it; the fds are the host's numbers, dup2'd onto
// themselves by posix_spawn so exactly these lose CLOEXEC in the child):
//   exe --knit-process-worker NUMBER HOST_PID MEMFD REQUEST_FD ANSWER_FD ALIVE_FD ARENA_BYTES
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "process/child_end.hpp"
#include "process/shared_region.hpp"
#include "process/unique_fd.hpp"

namespace knit::detail {

inline constexpr std::string_view worker_marker = "--knit-process-worker";
inline constexpr int worker_argc = 9;

// A started child as its host holds it. Destroying it does not stop the child: its owner
// kills and reaps it (end_child, starter.hpp).
struct child_process {
  pid_t pid = -1;
  std::uint64_t id = 0;  // the starter's name for it (0: not started by the starter)
  // Its end, shared with the starter's watch (child_end.hpp): who reaps it, and how it ended.
  std::shared_ptr<child_end> end = std::make_shared<child_end>();
  unique_fd pidfd;    // readable once the child has ended; waitid(P_PIDFD) reaps it
  unique_fd request;  // host -> child eventfd
  unique_fd answer;   // child -> host eventfd
  unique_fd alive;    // the pipe's write end: closing it (or the host's death) ends the child
  shared_region region;
};

// Spawns knit-worker-`number` with a mapping of `lanes` lanes (shared_region.hpp), whose
// waits spin for spin_ns (slot_bell.hpp). Throws process_error(worker_start_failed).
child_process spawn_child(const std::string& executable, unsigned number, std::size_t arena_bytes,
                          unsigned lanes, std::uint64_t spin_ns, const region_sandbox& sandbox);

}  // namespace knit::detail

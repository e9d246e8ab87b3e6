// knit/process_options.hpp: the policy of a pool's worker processes (pool_options::process):
// arenas, lanes, crash-loop backoff, the sandbox. Each pool has its own, so two pools in one
// program may differ.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "knit/error.hpp"
#include "knit/export.hpp"

namespace knit {

/// What a worker process may do (process_options::sandbox).
enum class process_sandbox {
  off,     ///< Nothing beyond the process boundary (and the closed fds): crash isolation only.
  strict,  ///< A seccomp filter, no new privileges, no capabilities, no core dumps, few open
           ///< files, and its own namespaces where the kernel allows them
           ///< (docs/process-workers.md: the threat model and what it allows and refuses).
};

/// @brief The policy of a pool's process workers (pool_options::process): arena bound,
/// lanes, crash-loop detection, backoff, sandbox. Read when the pool starts its first child.
struct KNIT_API process_options {
  /// Bytes of each of a child's two arenas per lane (request, answer). A request over it
  /// fails with errc::payload_too_large before anything is sent; an answer over it fails the
  /// same way.
  std::size_t arena_bytes = std::size_t{1} << 20;
  /// How many calls one host may have in one child at once, 1 .. 32: the one it runs and
  /// those queued behind it in its mapping, which it starts as soon as it answers the one
  /// before, without waiting for the host. Each lane has its own pair of arenas: a child's
  /// mapping is 4 KiB + lanes x 2 x arena_bytes of address space, of which only the pages
  /// calls write take memory. A call queued behind a slow one is moved to an idle child.
  unsigned lanes = 2;
  /// Crash loop: this many crashes of one worker's children within crash_loop_window make
  /// it degraded, and each respawn then waits (backoff). Degraded ends by itself once the
  /// window holds fewer crashes.
  unsigned crash_loop_crashes = 5;
  /// The window of the crash-loop count (T).
  std::chrono::milliseconds crash_loop_window{10'000};
  /// The first wait of a degraded worker before its respawn; doubled at each further crash
  /// within the window, up to backoff_max.
  std::chrono::milliseconds backoff_initial{100};
  /// The longest wait before a respawn.
  std::chrono::milliseconds backoff_max{5'000};
  /// How long a child spins for the next request before it sleeps, so a request within it
  /// costs no wake. Only where the child may run on more than one CPU. At most 1 s; 0 =
  /// never spin.
  std::chrono::microseconds spin{20};
  /// How long a new child has to finish its handshake.
  std::chrono::milliseconds start_timeout{5'000};
  /// How long a child may take to begin a call once that call is its oldest (the child
  /// marks each call as it begins it). Past it the child is taken for hung — a task before
  /// may have left it broken — and killed, and the call, which never began, goes to another
  /// child. A healthy child begins within its wake-up time.
  std::chrono::milliseconds begin_timeout{1'000};
  /// The program a child runs: this same binary by default; it must call worker_main.
  std::string worker_executable = "/proc/self/exe";
  /// strict: the child confines itself as the last step of its handshake (a child that
  /// cannot fails its start); a refused system call ends the child and fails its call with
  /// errc::sandbox_violation naming the call.
  process_sandbox sandbox = process_sandbox::off;
  /// The address space a child may add after its handshake (RLIMIT_AS = its size then plus
  /// this), in bytes; 0 = no limit. A task whose allocation fails under it (std::bad_alloc)
  /// fails its call with errc::memory_limit and its child is replaced.
  std::size_t memory_limit = 0;
  /// RLIMIT_NOFILE of a sandboxed child (its own fds included), 8 .. 65536.
  unsigned open_files = 64;
  /// A spare child per worker: once a worker's child is taken for calls, one more is
  /// started off the request path and kept handshaken and idle, so a crash or a kill is
  /// replaced by a child that is already up, and a new spare is started at once (after the
  /// crash-loop backoff). It costs one idle process per worker (its memory; no CPU while
  /// idle), counted in children_live. Off by default in the library (a program that never
  /// crashes pays nothing); knit-server turns it on.
  bool spare_child = false;
  /// Nice value each child is given as it starts, 0 to 19, set by the host with setpriority on
  /// the child's pid (so the sandbox's filter need not allow it); 0 = inherited. A pool's
  /// children, when it is left 0, get what the pool's worker threads get from
  /// pool_options::worker_nice or heavy_share.
  int nice = 0;

  /// @throws config_error naming the first bad field.
  void validate() const;
};

}  // namespace knit

// The sandbox of a worker process (process_options::sandbox, memory_limit): what the child
// applies to itself as the last step of its handshake, and the host's reading of a refusal.
//
// strict:
//   - RLIMIT_CORE 0 (a crash writes no core with the task's data in it), RLIMIT_NOFILE
//     open_files, PR_SET_NO_NEW_PRIVS (no setuid binary could raise it, were exec allowed);
//   - a seccomp filter (libseccomp) on every thread of the child (TSYNC), default action
//     SCMP_ACT_TRAP: a refused call raises SIGSYS, whose handler (installed first) writes the
//     call's number + 1 into the region's sandbox_syscall word and _exits with
//     exit_sandbox_violation; the host reads the word after the death and names the call.
//     TRAP rather than KILL_PROCESS: only the child sees which call it was (waitid says
//     SIGSYS, not the call); rather than ERRNO: a task that meets a refusal has been fed
//     something it should not do, and its process is not trusted with the next call.
//   Allowed: memory (brk, mmap and mprotect without PROT_EXEC, munmap, mremap, madvise),
//   threads (clone with CLONE_THREAD; clone3 answers ENOSYS so glibc falls back to clone,
//   whose flags the filter can read), futex and the other sync calls, clocks and sleeps,
//   reads and writes on fds the child holds, open/openat read-only, stat family, poll,
//   signals to itself (kill/tgkill of its own pid: abort() and raise()), exit. Refused:
//   everything else, among it socket, connect, bind, execve, fork (clone without
//   CLONE_THREAD), vfork, ptrace, open for writing or creating, unlink, memfd_create,
//   kill of another process, setuid and friends, mount, bpf, io_uring. (A pipe of its own
//   is allowed: sanitizer runtimes probe memory through one.)
// memory_limit (with or without strict): RLIMIT_AS = the child's address space at the
//   handshake + memory_limit, so a task's allocation past it fails (std::bad_alloc; the
//   child answers out_of_memory and the host replaces it).
#pragma once

#include <cstdint>
#include <string>

#include "process/shared_region.hpp"

namespace knit::detail {

// The exit code of a child whose sandbox refused a call (its SIGSYS handler).
inline constexpr int exit_sandbox_violation = 125;

// In the child: applies what `h` asks for. Returns "" or why it could not.
std::string apply_sandbox(region_header& h);

// In the host: the name of system call `nr` on this architecture, or "syscall N".
std::string syscall_name(std::uint64_t nr);

}  // namespace knit::detail

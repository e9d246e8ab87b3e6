// The sandbox of a worker process (process_options::sandbox, memory_limit): what the child
// applies to itself as the last step of its handshake, and the host's reading of a death.
//
// strict:
//   - RLIMIT_CORE 0 (a crash writes no core with the task's data in it), RLIMIT_NOFILE
//     open_files, PR_SET_NO_NEW_PRIVS (no setuid binary could raise it, were exec allowed);
//   - every capability dropped when the child holds any (a root child): the bounding set
//     while CAP_SETPCAP is still held, the ambient set, then capset with empty sets. A root
//     child with CAP_SYS_PTRACE could read /proc/<host>/mem through an allowed read-only
//     open, the host's dumpable flag notwithstanding; CAP_DAC_* would read any file. A
//     child that cannot drop them (a service manager's filter refusing capset) fails its
//     start;
//   - a seccomp filter (libseccomp) on every thread of the child (TSYNC), default action
//     SCMP_ACT_TRAP, and the same for a call of another ABI (SCMP_FLTATR_ACT_BADARCH: an
//     i386 `int 0x80`, an x32 call): a refused call raises SIGSYS, whose handler (installed
//     first) writes the call's ABI and number into the region's sandbox_syscall word
//     (encode_refused_call) and _exits with exit_sandbox_violation. TRAP rather than
//     KILL_PROCESS: only the child sees which call it was (waitid says SIGSYS, not the
//     call); rather than ERRNO: a task that meets a refusal has been fed something it should
//     not do, and its process is not trusted with the next call.
//   Allowed: memory (brk, mmap and mprotect without PROT_EXEC, munmap, mremap, madvise),
//   threads (clone with CLONE_THREAD; clone3 answers ENOSYS so glibc falls back to clone,
//   whose flags the filter can read), futex and the other sync calls, clocks and sleeps,
//   reads and writes on fds the child holds, fcntl F_GETFD/F_SETFD/F_GETFL/F_DUPFD/
//   F_DUPFD_CLOEXEC/F_GET_SEALS and F_SETFL without O_ASYNC, open/openat read-only, stat
//   family, poll, signals to itself (kill/tgkill of its own pid: abort() and raise()), exit.
//   Refused: everything else, among it socket, connect, bind, execve, fork (clone without
//   CLONE_THREAD), vfork, ptrace, open for writing or creating, unlink, memfd_create,
//   kill of another process, setuid and friends, capset, mount, bpf, io_uring; fcntl
//   F_SETOWN/F_SETOWN_EX/F_SETSIG and F_SETFL with O_ASYNC (an fd shared with the host
//   made a signal source aimed at the host: SIGKILL by the kernel's hand), F_SETLEASE,
//   F_NOTIFY, the record locks, F_SETPIPE_SZ, F_ADD_SEALS; ioctl other than TCGETS
//   (FIOASYNC, FIOSETOWN among them). (A pipe of its own is allowed: sanitizer runtimes
//   probe memory through one.)
// memory_limit (with or without strict): RLIMIT_AS = the child's address space at the
//   handshake + memory_limit, so a task's allocation past it fails (std::bad_alloc; the
//   child answers out_of_memory and the host replaces it).
//
// The host's reading (judge_death): the kernel decides, the word only names. A death is a
// sandbox violation only when waitid says the child exited with exit_sandbox_violation or
// was killed by SIGSYS; the word the child wrote then names the call when it decodes to a
// known ABI and a plausible number, else the call is "an unnamed system call". Any other
// death is a crash, whatever the word says: a compromised task can write the word (it is
// in its own mapping), but it cannot make the kernel say SIGSYS about a SIGSEGV.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "process/exit_status.hpp"
#include "process/shared_region.hpp"

namespace knit::detail {

// The exit code of a child whose sandbox refused a call (its SIGSYS handler).
inline constexpr int exit_sandbox_violation = 125;

// In the child: applies what `h` asks for. Returns "" or why it could not.
std::string apply_sandbox(region_header& h);

// The ABI of a refused call: the high 32 bits of the sandbox_syscall word
// (shared_region.hpp). native: this build's own; i386 and x32 exist beside it on x86_64.
enum class sandbox_abi : std::uint32_t { native = 0, i386 = 1, x32 = 2 };
// The high 32 bits the SIGSYS handler writes for a call of an ABI it does not know.
inline constexpr std::uint32_t sandbox_abi_unknown = 0xffffffff;
// Numbers at or above it are not taken for a call's (none of the ABIs has that many): a
// word that says so was not written by the handler.
inline constexpr std::uint32_t sandbox_max_syscall = 1024;

// The sandbox_syscall word for call `nr` of `abi`: abi << 32 | (nr + 1). 0 stays "none".
constexpr std::uint64_t encode_refused_call(std::uint32_t abi, std::uint32_t nr) noexcept {
  return std::uint64_t{abi} << 32 | static_cast<std::uint32_t>(nr + 1);
}

struct refused_call {
  sandbox_abi abi;
  std::uint32_t nr;
};
// The call a word names: nullopt when it names none (0, an ABI code not in sandbox_abi, a
// number not below sandbox_max_syscall).
std::optional<refused_call> decode_refused_call(std::uint64_t word) noexcept;

// In the host: "system call 41 (socket)", "system call 20 (getpid) of the i386 ABI",
// "system call 39 (getpid) of the x32 ABI"; the name left out when libseccomp has none.
std::string syscall_name(refused_call call);
// The same for `v` = a sandbox_syscall word - 1 (ABI << 32 | nr; a bare native number is
// ABI 0), as callers read it before the word had an ABI; "system call N" past the ABIs.
std::string syscall_name(std::uint64_t v);

// How a child ended, judged by the host (see the top): `what` names the refused call
// ("system call 41 (socket)", "an unnamed system call") for a sandbox violation, and the
// death in the kernel's words ("killed by signal 11 (SIGSEGV)") for any other end.
struct death_verdict {
  bool sandbox_violation = false;
  std::string what;
};
// `how_it_ended`: waitid's result (child_end.hpp, how_it_ended); `sandbox_word`: the
// region's sandbox_syscall, read once (acquire) after the death.
death_verdict judge_death(const child_exit& how_it_ended, std::uint64_t sandbox_word);

}  // namespace knit::detail

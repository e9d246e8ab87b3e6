// The worker process's sandbox (sandbox.hpp): resource limits, no new privileges, no
// capabilities and the seccomp filter, applied by the child to itself; the host's judgement
// of a death and its name for a refused call.
#include "process/sandbox.hpp"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace knit::detail {
namespace {

std::uint64_t* violation_word = nullptr;  // the region's sandbox_syscall, for the handler
std::uint32_t native_arch = 0;            // AUDIT_ARCH_* of this build, for the handler

#if defined(__x86_64__)
// An x32 call is this architecture's with this bit in its number (asm/unistd.h).
constexpr std::uint32_t x32_syscall_bit = 0x40000000;
#endif

// The word for the call `info` reports (the filter's SIGSYS: si_arch, si_syscall).
std::uint64_t refused_call_word(const siginfo_t& info) noexcept {
  auto nr = static_cast<std::uint32_t>(info.si_syscall);
  std::uint32_t abi = sandbox_abi_unknown;
  if (info.si_arch == native_arch) {
    abi = static_cast<std::uint32_t>(sandbox_abi::native);
#if defined(__x86_64__)
    if (nr & x32_syscall_bit) {
      abi = static_cast<std::uint32_t>(sandbox_abi::x32);
      nr &= ~x32_syscall_bit;
    }
  } else if (info.si_arch == AUDIT_ARCH_I386) {
    abi = static_cast<std::uint32_t>(sandbox_abi::i386);
#endif
  }
  return encode_refused_call(abi, nr);
}

// SIGSYS from the filter: record which call, then end (async-signal-safe: a store and the
// exit_group system call itself). Not _exit(): a sanitizer runtime intercepts it and takes its
// own locks, which TSan's fork() interceptor already holds when the refused clone traps, so
// the child would hang there instead of ending.
void on_sigsys(int, siginfo_t* info, void*) {
  if (violation_word) __atomic_store_n(violation_word, refused_call_word(*info), __ATOMIC_RELEASE);
  ::syscall(SYS_exit_group, exit_sandbox_violation);
  __builtin_unreachable();
}

// One argument comparison of a rule. libseccomp's SCMP_A0..5 macros leave datum_b out of an
// equality test, which Clang's -Wmissing-field-initializers refuses; this names every field.
scmp_arg_cmp arg(unsigned index, scmp_compare op, scmp_datum_t a, scmp_datum_t b = 0) {
  return scmp_arg_cmp{index, op, a, b};
}

std::string failed(const char* what, int err) {
  return std::string(what) + ": " + std::strerror(err < 0 ? -err : err);
}

// The calls a task may make with any arguments (names absent on this architecture skipped).
constexpr const char* allowed_calls[] = {
    // fds the child holds
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "lseek",
    "close", "fstat", "newfstatat", "stat", "lstat", "statx", "dup", "dup2", "dup3", "poll",
    "ppoll", "select", "pselect6", "getdents64", "readlink", "readlinkat", "access", "faccessat",
    "faccessat2", "getcwd", "fsync", "fdatasync",
    // a pipe of its own (sanitizer runtimes probe memory through one)
    "pipe", "pipe2",
    // memory (mmap, mprotect: below)
    "brk", "munmap", "mremap", "madvise", "mincore", "msync", "mlock", "munlock", "membarrier",
    // threads and synchronisation (clone: below)
    "futex", "futex_waitv", "set_robust_list", "get_robust_list", "rseq", "set_tid_address",
    "sched_yield", "sched_getaffinity", "sched_getparam", "sched_getscheduler", "getpriority",
    // clocks and sleeps
    "clock_gettime", "clock_getres", "gettimeofday", "time", "nanosleep", "clock_nanosleep",
    // who am I
    "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getgroups",
    "getresuid", "getresgid", "uname", "sysinfo", "getrusage", "times", "getrlimit", "getrandom",
    "arch_prctl",
    // signals (kill, tgkill: below)
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait",
    "rt_sigsuspend", "sigaltstack", "restart_syscall",
    // the end
    "exit", "exit_group"};

// Drops every capability the child holds (a root child holds them all), before the filter
// (which refuses capset). The bounding set first, while CAP_SETPCAP is still held: no exec
// is allowed, but a set that would come back through one is not left behind either.
std::string drop_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return failed("capget", errno);
  bool any = false;
  for (const auto& d : data) any = any || d.effective || d.permitted || d.inheritable;
  // Ambient capabilities are a subset of permitted and inheritable: none when those are.
  if (!any) return "";
  if (data[0].effective & (1u << CAP_SETPCAP)) {
    for (int cap = 0; ::prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; ++cap) {
      if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) return failed("PR_CAPBSET_DROP", errno);
    }
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) {
    return failed("PR_CAP_AMBIENT_CLEAR_ALL", errno);
  }
  __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capset, &header, none) != 0) {
    return failed(
        "capset (dropping the child's capabilities; a service manager's system call "
        "filter must allow capset when the server holds any)",
        errno);
  }
  return "";
}

}  // namespace

std::string apply_sandbox(region_header& h) {
  const std::uint32_t strict = load(h.sandbox);
  const std::uint64_t memory_limit = load(h.memory_limit);
  if (memory_limit != 0) {
    // The address space now (mappings of the binary, libraries, the region, a sanitizer's
    // reservations) plus the limit: what the tasks may add.
    long pages = 0;
    if (FILE* statm = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(statm, "%ld", &pages) != 1) pages = 0;
      std::fclose(statm);
    }
    if (pages <= 0) return "cannot read /proc/self/statm for the memory limit";
    const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) +
                         static_cast<rlim_t>(memory_limit);
    const rlimit as{limit, limit};
    if (::setrlimit(RLIMIT_AS, &as) != 0) return failed("setrlimit(RLIMIT_AS)", errno);
  }
  if (!strict) return "";

  const rlimit no_core{0, 0};
  if (::setrlimit(RLIMIT_CORE, &no_core) != 0) return failed("setrlimit(RLIMIT_CORE)", errno);
  const rlim_t files = load(h.open_files);
  const rlimit nofile{files, files};
  if (::setrlimit(RLIMIT_NOFILE, &nofile) != 0) return failed("setrlimit(RLIMIT_NOFILE)", errno);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return failed("PR_SET_NO_NEW_PRIVS", errno);
  if (std::string why = drop_capabilities(); !why.empty()) return why;

  violation_word = &h.sandbox_syscall;
  native_arch = ::seccomp_arch_native();
  struct sigaction sa {};
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (::sigaction(SIGSYS, &sa, nullptr) != 0) return failed("sigaction(SIGSYS)", errno);
  sigset_t sys;
  sigemptyset(&sys);
  sigaddset(&sys, SIGSYS);
  ::pthread_sigmask(SIG_UNBLOCK, &sys, nullptr);

  scmp_filter_ctx ctx = ::seccomp_init(SCMP_ACT_TRAP);
  if (!ctx) return "seccomp_init failed";
  int rc = ::seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);  // every thread of the child
  // A call of another ABI (i386 int 0x80, x32) trapped too, not killed: the handler names it.
  if (rc == 0) rc = ::seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP);
  auto allow = [&](int nr, std::initializer_list<scmp_arg_cmp> args) {
    if (rc != 0 || nr == __NR_SCMP_ERROR) return;
    rc = ::seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, static_cast<unsigned>(args.size()),
                                  args.begin());
  };
  for (const char* name : allowed_calls) allow(::seccomp_syscall_resolve_name(name), {});
  // Memory, but never executable: no code the task did not come with.
  allow(SCMP_SYS(mmap), {arg(2, SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)});
  allow(SCMP_SYS(mprotect), {arg(2, SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)});
  // Threads, not processes: clone only with CLONE_THREAD. clone3 passes its flags in memory
  // the filter cannot read: ENOSYS, and glibc falls back to clone.
  allow(SCMP_SYS(clone), {arg(0, SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD)});
  if (rc == 0) rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  // fcntl: the commands a task needs. Not F_SETOWN/F_SETOWN_EX/F_SETSIG nor F_SETFL with
  // O_ASYNC: on an fd it shares with the host (stdio, the region) they make the kernel
  // send the signal of the task's choice (SIGKILL) to the pid of its choice (the host).
  // Nor leases, dnotify, record locks (a lock on a readable file could stall another
  // process), pipe sizes (the user's pipe memory) or new seals.
  for (const int cmd : {F_GETFD, F_SETFD, F_GETFL, F_DUPFD, F_DUPFD_CLOEXEC, F_GET_SEALS}) {
    allow(SCMP_SYS(fcntl), {arg(1, SCMP_CMP_EQ, static_cast<scmp_datum_t>(cmd))});
  }
  allow(SCMP_SYS(fcntl), {arg(1, SCMP_CMP_EQ, F_SETFL), arg(2, SCMP_CMP_MASKED_EQ, O_ASYNC, 0)});
  // Files read-only.
  constexpr scmp_datum_t writes = O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND;
  allow(SCMP_SYS(open), {arg(1, SCMP_CMP_MASKED_EQ, writes, 0)});
  allow(SCMP_SYS(openat), {arg(2, SCMP_CMP_MASKED_EQ, writes, 0)});
  // Signals to itself only (abort, raise).
  const auto self = static_cast<scmp_datum_t>(::getpid());
  allow(SCMP_SYS(kill), {arg(0, SCMP_CMP_EQ, self)});
  allow(SCMP_SYS(tgkill), {arg(0, SCMP_CMP_EQ, self)});
  // Names for its threads; isatty; reading its own limits.
  allow(SCMP_SYS(prctl), {arg(0, SCMP_CMP_EQ, PR_SET_NAME)});
  allow(SCMP_SYS(prctl), {arg(0, SCMP_CMP_EQ, PR_GET_NAME)});
  allow(SCMP_SYS(ioctl), {arg(1, SCMP_CMP_EQ, TCGETS)});
  allow(SCMP_SYS(prlimit64), {arg(0, SCMP_CMP_EQ, 0), arg(2, SCMP_CMP_EQ, 0)});
  if (rc == 0) rc = ::seccomp_load(ctx);
  ::seccomp_release(ctx);
  if (rc != 0) return failed("the seccomp filter", rc);
  return "";
}

std::optional<refused_call> decode_refused_call(std::uint64_t word) noexcept {
  const auto abi = static_cast<std::uint32_t>(word >> 32);
  const auto nr_plus_one = static_cast<std::uint32_t>(word);
  if (abi > static_cast<std::uint32_t>(sandbox_abi::x32)) return std::nullopt;
  if (nr_plus_one == 0 || nr_plus_one > sandbox_max_syscall) return std::nullopt;
  return refused_call{static_cast<sandbox_abi>(abi), nr_plus_one - 1};
}

std::string syscall_name(refused_call call) {
  std::uint32_t arch = SCMP_ARCH_NATIVE;
  const char* of = "";
  if (call.abi == sandbox_abi::i386) {
    arch = SCMP_ARCH_X86;
    of = " of the i386 ABI";
  } else if (call.abi == sandbox_abi::x32) {
    arch = SCMP_ARCH_X32;
    of = " of the x32 ABI";
  }
  char* name = ::seccomp_syscall_resolve_num_arch(arch, static_cast<int>(call.nr));
  std::string s = "system call " + std::to_string(call.nr);
  if (name) {
    s += std::string(" (") + name + ")";
    std::free(name);
  }
  return s + of;
}

std::string syscall_name(std::uint64_t v) {
  if (v != ~std::uint64_t{0}) {
    if (const auto call = decode_refused_call(v + 1)) return syscall_name(*call);
  }
  return "system call " + std::to_string(v);
}

death_verdict judge_death(const child_exit& how_it_ended, std::uint64_t sandbox_word) {
  const bool by_the_sandbox =
      how_it_ended.exited_with(exit_sandbox_violation) || how_it_ended.killed_by(SIGSYS);
  if (!by_the_sandbox) return {false, describe_exit(how_it_ended)};
  const auto call = decode_refused_call(sandbox_word);
  return {true, call ? syscall_name(*call) : std::string("an unnamed system call")};
}

}  // namespace knit::detail

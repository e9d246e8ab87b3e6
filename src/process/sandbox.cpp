// The worker process's sandbox (sandbox.hpp): resource limits, no new privileges and the
// seccomp filter, applied by the child to itself; the host's name for a refused call.
#include "process/sandbox.hpp"

#include <fcntl.h>
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

// SIGSYS from the filter: record which call, then end (async-signal-safe: a store and the
// exit_group system call itself). Not _exit(): a sanitizer runtime intercepts it and takes its
// own locks, which TSan's fork() interceptor already holds when the refused clone traps, so
// the child would hang there instead of ending.
void on_sigsys(int, siginfo_t* info, void*) {
  if (violation_word) {
    __atomic_store_n(violation_word, static_cast<std::uint64_t>(info->si_syscall) + 1,
                     __ATOMIC_RELEASE);
  }
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
    "close", "fstat", "newfstatat", "stat", "lstat", "statx", "fcntl", "dup", "dup2", "dup3",
    "poll", "ppoll", "select", "pselect6", "getdents64", "readlink", "readlinkat", "access",
    "faccessat", "faccessat2", "getcwd", "fsync", "fdatasync",
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

  violation_word = &h.sandbox_syscall;
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

std::string syscall_name(std::uint64_t nr) {
  char* name = ::seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, static_cast<int>(nr));
  std::string s = "system call " + std::to_string(nr);
  if (name) {
    s += std::string(" (") + name + ")";
    std::free(name);
  }
  return s;
}

}  // namespace knit::detail

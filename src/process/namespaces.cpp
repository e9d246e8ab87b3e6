// Confining a strict child (namespaces.hpp): the host's dumpable flag, the spawn in new
// namespaces, and the record current_confinement (spawn.hpp) reads.
#include "process/namespaces.hpp"

#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>

#include "knit/process.hpp"
#include "process/spawn.hpp"

namespace knit::detail {
namespace {

// What current_confinement reports, under its mutex: written by the thread that spawns a
// strict child (the starter), read by any. Leaked on purpose: read at any time, exit included.
struct confinement_record {
  std::mutex mutex;
  bool refused = false;  // the kernel refused the namespaces once: never asked again
  confinement state;
};

confinement_record& record() {
  static confinement_record* r = new confinement_record();
  return *r;
}

[[noreturn]] void fail(const std::string& what, int err) {
  throw process_error(errc::worker_start_failed, what + ": " + std::strerror(err));
}

// The kernel's struct sigaction (rt_sigaction's, not glibc's), as x86_64 and aarch64 lay it
// out; another architecture's is not written down here: posix_spawn, no namespaces.
#if defined(__x86_64__) || defined(__aarch64__)
constexpr bool clone_supported = true;
#else
constexpr bool clone_supported = false;
#endif
struct kernel_sigaction {
  void (*handler)(int);
  unsigned long flags;
  void (*restorer)();
  std::uint64_t mask;
};
constexpr long kernel_sigset_bytes = 8;

// What the child reads and writes between clone and exec. In the host's memory (CLONE_VM):
// the spawning thread stands still meanwhile (CLONE_VFORK) and no other thread sees it.
struct child_args {
  const spawn_plan* plan = nullptr;
  int mount_error = 0;               // written by the child: why it has no fresh /proc
  const char* mount_step = nullptr;  // written by the child: which step failed
  int exec_error = 0;                // written by the child: why it did not exec
};

// The child, from clone to exec: raw system calls only, on the host's memory. Nothing here
// may take a lock, touch glibc's state or go through a sanitizer's interceptor (no
// instrumentation either: the sanitizer's shadow of this stack is the host's).
__attribute__((no_sanitize("address", "thread", "undefined"))) int child_main(void* p) {
  child_args& a = *static_cast<child_args*>(p);
  const spawn_plan& plan = *a.plan;
  // Every signal the host handles back to its default (a host handler must never run
  // here), and the reset list's even when ignored; the host blocked them all around clone.
  for (int sig = 1; sig < _NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    kernel_sigaction old{};
    if (::syscall(SYS_rt_sigaction, sig, nullptr, &old, kernel_sigset_bytes) != 0) continue;
    bool reset = old.handler != SIG_DFL && old.handler != SIG_IGN;
    for (int r : reset_signals) reset = reset || (r == sig && old.handler != SIG_DFL);
    if (!reset) continue;
    kernel_sigaction dfl{};
    dfl.handler = SIG_DFL;
    ::syscall(SYS_rt_sigaction, sig, &dfl, nullptr, kernel_sigset_bytes);
  }
  // A /proc of the new PID namespace, while the new user namespace's capabilities last
  // (the exec drops them: no uid map). Private first, so nothing propagates to the host.
  if (::syscall(SYS_mount, nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    a.mount_error = errno;
    a.mount_step = "making its mounts private";
  } else if (::syscall(SYS_mount, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                       nullptr) != 0) {
    a.mount_error = errno;
    a.mount_step = "mounting a proc of its PID namespace";
  }
  // fds 0, 1, 2, then the protocol's fds kept across the exec (CLOEXEC cleared in this
  // child's copy of the table only).
  if (::syscall(SYS_dup3, plan.stdin_fd, 0, 0) < 0 ||
      ::syscall(SYS_dup3, plan.output_fd, 1, 0) < 0 ||
      ::syscall(SYS_dup3, plan.output_fd, 2, 0) < 0) {
    a.exec_error = errno;
    ::syscall(SYS_exit_group, 127);
  }
  for (std::size_t i = 0; i < plan.kept_count; ++i) {
    if (::syscall(SYS_fcntl, plan.kept[i], F_SETFD, 0) != 0) {
      a.exec_error = errno;
      ::syscall(SYS_exit_group, 127);
    }
  }
  const std::uint64_t none = 0;
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, nullptr, kernel_sigset_bytes);
  ::syscall(SYS_execve, plan.path, plan.argv, plan.envp);
  a.exec_error = errno;
  ::syscall(SYS_exit_group, 127);
  return 127;
}

// Refusals that mean "not here" rather than "not now": a service manager's
// RestrictNamespaces= or a container's filter (EPERM), an old kernel (ENOSYS, EINVAL), a
// namespace limit of 0 (ENOSPC; EUSERS before Linux 4.9).
bool refusal_is_for_good(int err) {
  return err == EPERM || err == ENOSYS || err == EINVAL || err == ENOSPC || err == EUSERS;
}

void note_refused(const std::string& why) {
  confinement_record& r = record();
  std::lock_guard lock(r.mutex);
  r.refused = true;
  r.state.namespaces = false;
  r.state.why_not = why;
}

}  // namespace

void refuse_namespaces(const std::string& why) { note_refused(why); }

void make_host_undumpable() {
  static std::once_flag once;
  std::call_once(once, [] { ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); });
}

confinement current_confinement() {
  confinement_record& r = record();
  std::lock_guard lock(r.mutex);
  confinement c = r.state;
  c.host_undumpable = ::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0;
  return c;
}

pid_t spawn_in_namespaces(const spawn_plan& plan, unique_fd& pidfd) {
  {
    confinement_record& r = record();
    std::lock_guard lock(r.mutex);
    if (r.refused) return 0;
  }
  if (!clone_supported) {
    note_refused("not built for this architecture (x86_64 and aarch64 only)");
    return 0;
  }
#if defined(__SANITIZE_THREAD__)
  // TSan's clone interceptor takes a CLONE_VM child for a fork and records it in memory the
  // host shares with it: the host's next thread start then dies ("starting new threads
  // after multi-threaded fork"). The sanitizer build runs without the namespaces; every
  // other layer holds, and the Release and ASan builds test them.
  note_refused(
      "not in a ThreadSanitizer build (its clone interceptor cannot follow a child "
      "that shares the host's memory)");
  return 0;
#endif
  constexpr std::size_t stack_bytes = 64 * 1024;
  void* stack = ::mmap(nullptr, stack_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) fail("knit: mmap of a stack to spawn on", errno);
  child_args a;
  a.plan = &plan;
  int fd = -1;
  // No signal handler of the host may run in the child, on the host's memory: all blocked
  // from before clone (the child inherits the mask) until the child has reset them.
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const int flags = CLONE_VM | CLONE_VFORK | CLONE_PIDFD | CLONE_NEWUSER | CLONE_NEWPID |
                    CLONE_NEWNS | CLONE_NEWNET | SIGCHLD;
  const pid_t pid = ::clone(child_main, static_cast<char*>(stack) + stack_bytes, flags, &a, &fd,
                            nullptr, nullptr);
  const int clone_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ::munmap(stack, stack_bytes);
  if (pid < 0) {
    if (!refusal_is_for_good(clone_error)) fail("knit: clone into new namespaces", clone_error);
    note_refused(std::string("clone(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET): ") +
                 std::strerror(clone_error));
    return 0;
  }
  pidfd.reset(fd);
  if (a.exec_error != 0) {
    // It ended before its exec (CLONE_VFORK: clone returned once it had): reap it.
    pidfd.reset();
    ::waitpid(pid, nullptr, 0);
    fail(std::string("knit: execve of ") + plan.path + " in new namespaces", a.exec_error);
  }
  confinement_record& r = record();
  std::lock_guard lock(r.mutex);
  r.state.namespaces = true;
  if (a.mount_error != 0 && r.state.private_proc_not.empty()) {
    r.state.private_proc_not = std::string(a.mount_step) + ": " + std::strerror(a.mount_error);
  }
  return pid;
}

}  // namespace knit::detail

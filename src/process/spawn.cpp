// spawn_child: creates what a child shares with its host and posix_spawns it (spawn.hpp).
#include "process/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "knit/process.hpp"
#include "process/pidfd.hpp"

extern char** environ;

namespace knit::detail {
namespace {

[[noreturn]] void fail(const std::string& what, int err) {
  throw process_error(errc::worker_start_failed, what + ": " + std::strerror(err));
}

// posix_spawn's attributes and file actions, destroyed on every path.
struct spawn_setup {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  spawn_setup() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~spawn_setup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  spawn_setup(const spawn_setup&) = delete;
  spawn_setup& operator=(const spawn_setup&) = delete;
};

}  // namespace

child_process spawn_child(const std::string& executable, unsigned number, std::size_t arena_bytes,
                          unsigned lanes, std::uint64_t spin_ns, const region_sandbox& sandbox) {
  child_process c;
  unique_fd memfd;
  try {
    c.region = create_region(arena_bytes, lanes, spin_ns, sandbox, memfd);
  } catch (const std::system_error& e) {
    throw process_error(errc::worker_start_failed, e.what());
  }
  c.request = unique_fd(::eventfd(0, EFD_CLOEXEC));
  c.answer = unique_fd(::eventfd(0, EFD_CLOEXEC));
  if (!c.request || !c.answer) fail("knit: eventfd", errno);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) fail("knit: pipe2", errno);
  unique_fd alive_read(pipe_fds[0]);
  c.alive = unique_fd(pipe_fds[1]);

  spawn_setup s;
  // dup2 of a fd onto itself clears its FD_CLOEXEC in the child (POSIX; glibc >= 2.29):
  // these four cross the exec, every other fd of the host stays behind.
  for (int fd : {memfd.get(), c.request.get(), c.answer.get(), alive_read.get()}) {
    if (int e = posix_spawn_file_actions_adddup2(&s.actions, fd, fd)) fail("knit: adddup2", e);
  }
  // A worker thread may block signals (a server blocks SIGINT/SIGTERM on its threads):
  // the child starts with none blocked and the usual ones at their default.
  sigset_t none;
  sigemptyset(&none);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2}) {
    sigaddset(&defaults, sig);
  }
  posix_spawnattr_setsigmask(&s.attr, &none);
  posix_spawnattr_setsigdefault(&s.attr, &defaults);
  posix_spawnattr_setflags(&s.attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> args = {executable,
                                   std::string(worker_marker),
                                   std::to_string(number),
                                   std::to_string(::getpid()),
                                   std::to_string(memfd.get()),
                                   std::to_string(c.request.get()),
                                   std::to_string(c.answer.get()),
                                   std::to_string(alive_read.get()),
                                   std::to_string(arena_bytes)};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = -1;
  if (int e = ::posix_spawn(&pid, executable.c_str(), &s.actions, &s.attr, argv.data(), environ)) {
    fail("knit: posix_spawn of " + executable, e);
  }
  c.pid = pid;
  // No one else reaps our children (documented), so the pid names this child until we
  // waitid it: the pidfd cannot point at a reused pid.
  c.pidfd = unique_fd(open_pidfd(pid));
  if (!c.pidfd) {
    const int e = errno;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    fail("knit: pidfd_open", e);
  }
  return c;  // memfd and alive_read close here: the child has its own copies
}

}  // namespace knit::detail

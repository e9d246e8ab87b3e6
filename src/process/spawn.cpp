// spawn_child: creates what a child shares with its host, then spawns it in new namespaces
// (strict) or with posix_spawn (spawn.hpp).
#include "process/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string_view>
#include <system_error>
#include <vector>

#include "knit/process.hpp"
#include "process/child_output.hpp"
#include "process/namespaces.hpp"
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

// Moves `fd` above stderr: a host with fd 0, 1 or 2 closed gets those numbers back from open
// and pipe, and the child's 0, 1 and 2 are dup2'd over them.
void above_stdio(unique_fd& fd) {
  if (fd.get() > STDERR_FILENO) return;
  const int moved = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  if (moved < 0) fail("knit: fcntl(F_DUPFD_CLOEXEC)", errno);
  fd.reset(moved);
}

unique_fd make_pipe(unique_fd& write_end, int flags) {
  int fds[2];
  if (::pipe2(fds, flags) != 0) fail("knit: pipe2", errno);
  write_end = unique_fd(fds[1]);
  return unique_fd(fds[0]);
}

pid_t posix_spawn_child(const spawn_plan& plan) {
  spawn_setup s;
  auto dup2_action = [&](int from, int to) {
    if (int e = posix_spawn_file_actions_adddup2(&s.actions, from, to)) fail("knit: adddup2", e);
  };
  dup2_action(plan.stdin_fd, STDIN_FILENO);
  dup2_action(plan.output_fd, STDOUT_FILENO);
  dup2_action(plan.output_fd, STDERR_FILENO);
  // dup2 of a fd onto itself clears its FD_CLOEXEC in the child (POSIX; glibc >= 2.29):
  // these cross the exec, every other fd of the host stays behind.
  for (std::size_t i = 0; i < plan.kept_count; ++i) dup2_action(plan.kept[i], plan.kept[i]);
  // A worker thread may block signals (a server blocks SIGINT/SIGTERM on its threads):
  // the child starts with none blocked and the usual ones at their default.
  sigset_t none;
  sigemptyset(&none);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int sig : reset_signals) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&s.attr, &none);
  posix_spawnattr_setsigdefault(&s.attr, &defaults);
  posix_spawnattr_setflags(&s.attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  if (int e = ::posix_spawn(&pid, plan.path, &s.actions, &s.attr, plan.argv, plan.envp)) {
    fail(std::string("knit: posix_spawn of ") + plan.path, e);
  }
  return pid;
}

// A child spawned but not handed over: killed and reaped before the start fails.
void end_unborn(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

}  // namespace

namespace {

// Whether this process is a worker process knit started (its argv[1] is the marker): then
// its program did not call worker_main first in main, or it would never have come here.
bool started_as_worker() {
  static const bool worker = [] {
    std::FILE* f = std::fopen("/proc/self/cmdline", "r");
    if (!f) return false;
    char buf[256] = {};
    const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    const std::size_t first = ::strnlen(buf, n);  // argv[0] ends at the first NUL
    return first + 1 < n && std::string_view(buf + first + 1) == worker_marker;
  }();
  return worker;
}

}  // namespace

child_process spawn_child(const std::string& executable, unsigned number, std::size_t arena_bytes,
                          unsigned lanes, std::uint64_t spin_ns, const region_sandbox& sandbox) {
  if (started_as_worker()) {
    // Loud and at once: this child must start no child of its own.
    std::fprintf(stderr,
                 "knit: this worker process (pid %d) reached a start of worker processes "
                 "instead of knit::worker_main: call `if (knit::worker_main(argc, argv)) "
                 "return 0;` first in main, after registering the process tasks\n",
                 static_cast<int>(::getpid()));
    ::_exit(exit_no_worker_main);
  }
  if (sandbox.strict) make_host_undumpable();  // before any strict child exists
  child_process c;
  unique_fd memfd;
  try {
    c.region = create_region(arena_bytes, lanes, spin_ns, sandbox, memfd);
  } catch (const std::system_error& e) {
    throw process_error(errc::worker_start_failed, e.what());
  }
  // The request bell: a pipe, both ends O_NONBLOCK, the write end the host's alone
  // (slot_bell.hpp). The answer bell: an eventfd.
  unique_fd request_read = make_pipe(c.request, O_CLOEXEC | O_NONBLOCK);
  c.answer = unique_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!c.answer) fail("knit: eventfd", errno);
  unique_fd alive_read = make_pipe(c.alive, O_CLOEXEC);
  // The child's stdout and stderr: blocking for the child (a child over its bound waits in
  // its own write), O_NONBLOCK for the forwarder.
  unique_fd output_write;
  unique_fd output_read = make_pipe(output_write, O_CLOEXEC);
  if (::fcntl(output_read.get(), F_SETFL, O_NONBLOCK) != 0) fail("knit: fcntl(O_NONBLOCK)", errno);
  unique_fd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull) fail("knit: open /dev/null", errno);
  for (unique_fd* fd : {&memfd, &request_read, &c.answer, &alive_read, &output_write, &devnull}) {
    above_stdio(*fd);
  }

  std::vector<std::string> args = {executable,
                                   std::string(worker_marker),
                                   std::to_string(number),
                                   std::to_string(::getpid()),
                                   std::to_string(memfd.get()),
                                   std::to_string(request_read.get()),
                                   std::to_string(c.answer.get()),
                                   std::to_string(alive_read.get()),
                                   std::to_string(arena_bytes)};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int kept[] = {memfd.get(), request_read.get(), c.answer.get(), alive_read.get()};
  spawn_plan plan;
  plan.path = executable.c_str();
  plan.argv = argv.data();
  plan.envp = environ;
  plan.stdin_fd = devnull.get();
  plan.output_fd = output_write.get();
  plan.kept = kept;
  plan.kept_count = std::size(kept);

  pid_t pid = sandbox.strict ? spawn_in_namespaces(plan, c.pidfd) : 0;
  if (pid == 0) {
    pid = posix_spawn_child(plan);
    // No one else reaps our children (documented), so the pid names this child until we
    // waitid it: the pidfd cannot point at a reused pid.
    c.pidfd = unique_fd(open_pidfd(pid));
    if (!c.pidfd) {
      const int e = errno;
      end_unborn(pid);
      fail("knit: pidfd_open", e);
    }
  }
  c.pid = pid;
  if (!forward_child_output(std::move(output_read), number, pid)) {
    c.pidfd.reset();
    end_unborn(pid);
    fail("knit: cannot forward the output of knit-proc-" + std::to_string(number), ENOMEM);
  }
  c.request_reader = std::move(request_read);  // never read: no EPIPE (spawn.hpp)
  return c;  // memfd, the other pipes' child ends and devnull close here: the child has its own
}

}  // namespace knit::detail

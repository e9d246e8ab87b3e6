// Child processes without a shell: fork/execve with a set environment, CPU affinity
// and output to a file; waiting, and stopping by PID (never by name).
#include "driver/system/spawn.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace knit::bench {
namespace {

// Only async-signal-safe calls are allowed between fork and exec, so everything the
// child needs is prepared here first.
struct c_strings {
  std::vector<std::string> storage;
  std::vector<char*> ptrs;
  explicit c_strings(const std::vector<std::string>& v) : storage(v) {
    for (auto& s : storage) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
  }
};

[[noreturn]] void child_fail(int pipe_fd) {
  int e = errno;
  (void)!::write(pipe_fd, &e, sizeof e);
  ::_exit(127);
}

// The number of NUL-terminated strings in /proc/PID/<leaf> (cmdline or environ).
size_t proc_string_count(pid_t pid, const char* leaf) {
  std::string path = "/proc/" + std::to_string(pid) + "/" + leaf;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  size_t count = 0;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0)
    for (ssize_t i = 0; i < n; ++i) count += buf[i] == '\0';
  ::close(fd);
  return count;
}

// True once `pid` has exited (a zombie we have not reaped), without reaping it.
bool has_exited(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

// Waits until the kernel has finished laying out the new program after exec.
//
// Why: the CLOEXEC pipe closes in begin_new_exec(), once the new address space is in
// place (/proc/PID/exe already names the new binary), but before the ELF loader's
// create_elf_tables() has set the new mm's argument and environment ranges. Until then
// /proc/PID/cmdline and /proc/PID/environ read empty, or short: the ranges are written
// one after the other, argv first, env_end last. (Spawning with 20,000 environment
// strings and reading environ at once shows it: Spawn.IdentityIsCompleteTheMomentSpawnReturns.)
//
// Why this condition suffices: once cmdline shows as many strings as we passed in argv
// AND environ as many as we passed in envp, both ranges are final; the kernel does not
// write them again (only the program itself could, with prctl(PR_SET_MM)). Counting, not
// comparing, keeps this a "has exec finished" test: whether they are the RIGHT strings
// is check_process_identity's job.
//
// No unprivileged event tells a parent that is not a tracer that exec has finished (the
// proc connector needs CAP_NET_ADMIN; PTRACE_TRACEME is refused under Yama scope 2 and
// when a debugger traces us), so this polls. Bounded: a child that exits, or a program
// that shortens its own cmdline at once, ends the wait; after 2 s we return and let the
// identity check report what /proc shows.
void wait_for_exec_layout(pid_t pid, size_t argc, size_t envc) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (int attempt = 0;; ++attempt) {
    if (proc_string_count(pid, "cmdline") >= argc && proc_string_count(pid, "environ") >= envc)
      return;
    if (has_exited(pid) || std::chrono::steady_clock::now() >= deadline) return;
    if (attempt < 100) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace

std::string exit_status::text() const {
  if (exited) return "exit code " + std::to_string(code);
  return std::string("killed by signal ") + std::to_string(signal) + " (" + strsignal(signal) + ")";
}

pid_t spawn_process(const spawn_spec& spec) {
  if (spec.exe.empty()) throw std::runtime_error("spawn: no executable");
  c_strings argv(spec.argv.empty() ? std::vector<std::string>{spec.exe} : spec.argv);
  c_strings envp(spec.env);
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : spec.cpus) CPU_SET(c, &set);
  const std::string out = spec.output_path.empty() ? "/dev/null" : spec.output_path;

  // The CLOEXEC pipe reports exec failure: EOF means exec passed its point of no return
  // and /proc/PID/exe names the new program; wait_for_exec_layout() then waits for the
  // argument and environment ranges, so that /proc shows the whole new identity.
  int pfd[2];
  if (::pipe2(pfd, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(pfd[0]);
    ::close(pfd[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(e));
  }
  if (pid == 0) {
    ::close(pfd[0]);
    // Own process group: a Ctrl-C at the terminal reaches the driver, which then stops
    // the server in order, instead of killing both mid-measurement.
    ::setpgid(0, 0);
    if (spec.die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(127);
    }
    int in = ::open("/dev/null", O_RDONLY);
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in < 0 || fd < 0) child_fail(pfd[1]);
    if (::dup2(in, 0) < 0 || ::dup2(fd, 1) < 0 || ::dup2(fd, 2) < 0) child_fail(pfd[1]);
    if (!spec.cpus.empty() && ::sched_setaffinity(0, sizeof set, &set) != 0) child_fail(pfd[1]);
    // Undo anything the driver did to signal handling; exec resets handlers but not masks.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(spec.exe.c_str(), argv.ptrs.data(), envp.ptrs.data());
    child_fail(pfd[1]);
  }
  ::close(pfd[1]);
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(pfd[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  ::close(pfd[0]);
  if (n > 0) {
    ::waitpid(pid, nullptr, 0);
    throw std::runtime_error("cannot start " + spec.exe + ": " + std::strerror(child_errno));
  }
  wait_for_exec_layout(pid, argv.ptrs.size() - 1, envp.ptrs.size() - 1);
  return pid;
}

std::optional<exit_status> reap_nohang(pid_t pid) {
  int status = 0;
  pid_t r = ::waitpid(pid, &status, WNOHANG);
  if (r == 0) return std::nullopt;
  exit_status s;
  if (r < 0) {
    // Not our child (or already reaped): treat as gone, with an honest description.
    s.exited = true;
    s.code = -1;
    return s;
  }
  if (WIFEXITED(status)) {
    s.exited = true;
    s.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    s.signal = WTERMSIG(status);
  }
  return s;
}

std::optional<exit_status> wait_exit(pid_t pid, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    if (auto s = reap_nohang(pid)) return s;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

exit_status stop_process(pid_t pid, double grace_s, bool* killed) {
  if (killed) *killed = false;
  if (auto s = reap_nohang(pid)) return *s;
  ::kill(pid, SIGTERM);
  if (auto s = wait_exit(pid, grace_s)) return *s;
  if (killed) *killed = true;
  ::kill(pid, SIGKILL);
  if (auto s = wait_exit(pid, 10.0)) return *s;
  throw std::runtime_error("process " + std::to_string(pid) + " survived SIGKILL for 10 s");
}

std::vector<std::string> child_environment(const std::map<std::string, std::string>& set) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    std::string name = kv.substr(0, kv.find('='));
    if (name.rfind("KNIT_", 0) == 0 || name == "PORT" || name == "HOST" || name == "JWT_SECRET")
      continue;
    if (set.count(name)) continue;
    env.push_back(kv);
  }
  for (const auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

namespace {
bool is_executable_file(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}
}  // namespace

std::string find_in_path(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return is_executable_file(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    std::string p = (dir.empty() ? "." : dir) + "/" + name;
    if (is_executable_file(p)) return p;
  }
  return "";
}

std::optional<std::string> capture_output(const std::vector<std::string>& argv) {
  if (argv.empty()) return std::nullopt;
  std::string exe = find_in_path(argv[0]);
  if (exe.empty()) return std::nullopt;
  char tmpl[] = "/tmp/knit-bench-capture-XXXXXX";
  int fd = ::mkstemp(tmpl);
  if (fd < 0) return std::nullopt;
  ::close(fd);
  spawn_spec spec;
  spec.exe = exe;
  spec.argv = argv;
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  env.emplace_back("LC_ALL=C");  // stable field names from lscpu and friends
  spec.env = env;
  spec.output_path = tmpl;
  std::optional<std::string> result;
  try {
    pid_t pid = spawn_process(spec);
    auto st = wait_exit(pid, 10.0);
    if (!st) {
      stop_process(pid, 1.0);
    } else if (st->exited && st->code == 0) {
      FILE* f = std::fopen(tmpl, "r");
      if (f) {
        std::string s;
        char buf[4096];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
        std::fclose(f);
        result = s;
      }
    }
  } catch (const std::exception&) {
  }
  ::unlink(tmpl);
  return result;
}

}  // namespace knit::bench

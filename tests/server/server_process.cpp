// fork/exec of knit-server with a controlled environment; stdout read by line with deadlines.
#include "server_process.hpp"

#include "refuse_io_uring.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

extern char** environ;

namespace knit_test {
namespace {

// Every variable knit-server or the knit pool reads: removed from the inherited environment
// (NOTIFY_SOCKET: a test run under systemd must not notify its manager).
bool server_reads(const std::string& entry) {
  for (const char* prefix : {"KNIT_", "PORT=", "HOST=", "JWT_SECRET=", "NOTIFY_SOCKET="}) {
    if (entry.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

using steady = std::chrono::steady_clock;

int remaining_ms(steady::time_point end) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - steady::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

}  // namespace

server_process::server_process(std::map<std::string, std::string> env) {
  // PORT=0: the server binds a port the kernel picks and says which in "listening on"
  // (wait_listening reads it). A port picked here and closed could be taken before the
  // server binds it (seen in CI: another test's connection took it, EADDRINUSE).
  env.try_emplace("PORT", "0");
  if (!env.count("JWT_SECRET")) env["JWT_SECRET"] = "knit-test-secret";
  // KNIT_TEST_IO: the suite's KNIT_IO where a test sets none (the epoll run of the e2e tests,
  // tests/server/CMakeLists.txt); the default otherwise (auto: io_uring where granted).
  if (const char* io = std::getenv("KNIT_TEST_IO"); io != nullptr && !env.count("KNIT_IO")) {
    env["KNIT_IO"] = io;
  }
  try {
    port_ = static_cast<std::uint16_t>(std::stoul(env["PORT"]));
  } catch (...) {
    port_ = 0;  // a deliberately invalid PORT: the test expects the server to refuse it
  }

  // Not a variable: the child refuses itself io_uring before it execs (refuse_io_uring.hpp).
  const bool refuse_ring = env.erase(std::string(kRefuseIoUring)) > 0;

  std::vector<std::string> entries;
  for (char** e = environ; *e; ++e) {
    if (!server_reads(*e)) entries.emplace_back(*e);
  }
  for (const auto& [name, value] : env) entries.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (auto& entry : entries) envp.push_back(entry.data());
  envp.push_back(nullptr);

  char stderr_template[] = "/tmp/knit-server-test-stderr-XXXXXX";
  // O_CLOEXEC here and on every test socket: a later server child must not inherit them.
  const int stderr_fd = ::mkostemp(stderr_template, O_CLOEXEC);
  if (stderr_fd < 0) throw std::runtime_error("mkostemp failed");
  stderr_path_ = stderr_template;

  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");

  const char* path = KNIT_SERVER_PATH;
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    // Child: stdout to the pipe, stderr to the file, then become the server.
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(stderr_fd, STDERR_FILENO);
    if (refuse_ring && !refuse_io_uring()) std::_Exit(126);
    char* argv[] = {const_cast<char*>(path), nullptr};
    ::execve(path, argv, envp.data());
    std::_Exit(127);
  }
  ::close(out[1]);
  ::close(stderr_fd);
  stdout_fd_ = out[0];
}

server_process::~server_process() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  if (!stderr_path_.empty()) ::unlink(stderr_path_.c_str());
}

std::optional<std::string> server_process::read_line(std::chrono::milliseconds deadline) {
  const auto end = steady::now() + deadline;
  for (;;) {
    if (auto nl = pending_.find('\n'); nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      stdout_seen_ += line + "\n";
      return line;
    }
    if (stdout_fd_ < 0) return std::nullopt;  // close_stdout()
    pollfd p{stdout_fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, remaining_ms(end));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;  // deadline
    char chunk[4096];
    const ssize_t n = ::read(stdout_fd_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;  // the child closed stdout (exited)
    pending_.append(chunk, static_cast<std::size_t>(n));
  }
}

bool server_process::wait_listening(std::chrono::milliseconds deadline) {
  const auto end = steady::now() + deadline;
  while (auto line = read_line(std::chrono::milliseconds(remaining_ms(end)))) {
    if (line->rfind("listening on ", 0) == 0) {
      // "listening on http://HOST:PORT" (an IPv6 HOST in brackets): the port after the last
      // colon, the one the server bound (PORT=0 or not).
      const std::size_t colon = line->rfind(':');
      if (colon == std::string::npos) return false;  // a line this harness cannot read
      unsigned port = 0;
      const char* line_end = line->data() + line->size();
      const auto [at, ec] = std::from_chars(line->data() + colon + 1, line_end, port);
      if (ec != std::errc() || at != line_end || port == 0 || port > 65535) return false;
      port_ = static_cast<std::uint16_t>(port);
      return true;
    }
  }
  return false;
}

void server_process::close_stdout() {
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  stdout_fd_ = -1;
}

void server_process::signal(int signo) const {
  if (pid_ > 0) ::kill(pid_, signo);
}

int server_process::wait_exit(std::chrono::milliseconds deadline) {
  if (pid_ <= 0) return -1;
  const auto end = steady::now() + deadline;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    if (steady::now() >= end) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
      return -1;
    }
    std::this_thread::sleep_for(10ms);
  }
}

int server_process::stop(std::chrono::milliseconds deadline) {
  signal(SIGTERM);
  return wait_exit(deadline);
}

std::string server_process::stderr_text() const {
  std::ifstream in(stderr_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace knit_test

// Tasks that attack their host from inside a child, as a task compromised by its input would,
// for spawn_hardening_test.cpp. Each reports what it managed in words (or is stopped by the
// sandbox first, which fails its own call). Registered at static initialisation, in the
// host and in every child alike (the same binary, the same order).
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "knit/process.hpp"
#include "process/child_slot.hpp"

namespace knit_test {
namespace {

using namespace std::chrono_literals;

std::string outcome(long r) { return r >= 0 ? "ok" : std::strerror(errno); }

// This child's argv, as the host wrote it (spawn.hpp): an attacker reads it to find the fds.
std::vector<std::string> own_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  std::size_t from = 0;
  for (std::size_t nul; (nul = all.find('\0', from)) != std::string::npos; from = nul + 1) {
    args.push_back(all.substr(from, nul - from));
  }
  return args;
}

// "ino0 ino1 ino2": what fds 0, 1 and 2 are (the host compares them with its own).
std::string stdio_identity() {
  // ostringstream: GCC 12 raises a bogus -Wrestrict on the string concatenation.
  std::ostringstream r;
  for (int fd = 0; fd < 3; ++fd) {
    struct stat st {};
    if (fd) r << ' ';
    if (::fstat(fd, &st) == 0) {
      r << st.st_ino;
    } else {
      r << "none";
    }
  }
  return r.str();
}

// Makes fds 1 and 2 a signal source aimed at the host (`host_pid`): F_SETOWN to it, F_SETSIG
// SIGKILL, O_ASYNC and O_NONBLOCK, then writes 1 MiB in 4 KiB blocks for at most 2 s. On an
// open file it shared with the host, each read of the host's stderr reader would SIGKILL the
// host, and the host's own writes would find O_NONBLOCK set.
std::string stdio_attack(std::string_view in) {
  const pid_t host = static_cast<pid_t>(std::stol(std::string(in)));
  std::string r;
  for (int fd : {1, 2}) {
    r += "fd " + std::to_string(fd) + ": setown " + outcome(::fcntl(fd, F_SETOWN, host));
    r += ", setsig " + outcome(::fcntl(fd, F_SETSIG, SIGKILL));
    const int flags = ::fcntl(fd, F_GETFL);
    r += ", async " + outcome(::fcntl(fd, F_SETFL, flags | O_ASYNC | O_NONBLOCK)) + "; ";
  }
  const std::string block(4096, 'x');
  std::size_t written = 0;
  const auto until = std::chrono::steady_clock::now() + 2s;
  while (written < (std::size_t{1} << 20) && std::chrono::steady_clock::now() < until) {
    const ssize_t n = ::write(2, block.data(), block.size());
    if (n > 0) written += static_cast<std::size_t>(n);
    if (n < 0) std::this_thread::sleep_for(1ms);
  }
  return r + "wrote " + std::to_string(written);
}

// Writes lines of 100 bytes to stderr for `in` ms (O_NONBLOCK on its own pipe end, so that it
// can stop: past the forwarder's bound a blocking write would wait), returns the bytes written.
std::string flood(std::string_view in) {
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(std::stol(std::string(in)));
  ::fcntl(2, F_SETFL, ::fcntl(2, F_GETFL) | O_NONBLOCK);
  std::string line(99, 'f');
  line += '\n';
  std::size_t written = 0;
  while (std::chrono::steady_clock::now() < until) {
    const ssize_t n = ::write(2, line.data(), line.size());
    if (n > 0) written += static_cast<std::size_t>(n);
    if (n < 0) std::this_thread::sleep_for(1ms);
  }
  return std::to_string(written);
}

// The request bell attack: 0xfffffffffffffffe into the fd argv names REQUEST_FD, and into
// every other fd of this child it can write 8 bytes to (the answer eventfd aside: its
// stall is another matter), then child_sleeping = 1 so the host rings on its next call, and
// a sleep of `in` ms during which this child drains nothing. An eventfd bell shared with the
// host would now block the host's next write (its count cannot take one more) until then.
std::string bell_attack(std::string_view in) {
  const std::vector<std::string> args = own_argv();
  const int request_fd = args.size() > 5 ? std::stoi(args[5]) : -1;
  const int answer_fd = args.size() > 6 ? std::stoi(args[6]) : -1;
  const std::uint64_t almost_full = 0xfffffffffffffffeULL;
  std::string r = "request fd " + std::to_string(request_fd) + ": " +
                  outcome(::write(request_fd, &almost_full, sizeof almost_full));
  if (DIR* d = ::opendir("/proc/self/fd")) {
    std::vector<int> fds;
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') fds.push_back(std::atoi(e->d_name));
    }
    ::closedir(d);
    for (int fd : fds) {
      if (fd < 3 || fd == request_fd || fd == answer_fd) continue;
      struct stat st {};
      if (::fstat(fd, &st) != 0 || S_ISREG(st.st_mode)) continue;  // the memfd is a file
      // Never block here: a pipe's read end held by the child refuses a write (EBADF).
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
      r += ", fd " + std::to_string(fd) + ": " +
           outcome(::write(fd, &almost_full, sizeof almost_full));
    }
  }
  const knit::detail::child_slot s = knit::detail::current_child_slot();
  std::atomic_ref<std::uint32_t>(s.header->child_sleeping).store(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(std::stol(std::string(in))));
  return r;
}

// Reads the host's memory and environment through /proc (the host's pid is `in`).
std::string proc_attack(std::string_view in) {
  const std::string host = "/proc/" + std::string(in);
  std::string r;
  for (const char* what : {"mem", "environ"}) {
    const int fd = ::open((host + "/" + what).c_str(), O_RDONLY | O_CLOEXEC);
    r += std::string(what) + ": " + outcome(fd);
    if (fd >= 0) {
      char c;
      r += " read " + outcome(::read(fd, &c, 1));
      ::close(fd);
    }
    r += "; ";
  }
  struct stat st {};
  return r + "listed: " + outcome(::stat(host.c_str(), &st));
}

[[maybe_unused]] const bool registered = [] {
  knit::register_process_task("hostile_stdio_identity",
                              [](std::string_view) { return stdio_identity(); });
  knit::register_process_task("hostile_setown_probe", [](std::string_view) {
    return outcome(::fcntl(0, F_SETOWN, ::getpid()));  // aimed at itself: harmless
  });
  knit::register_process_task("hostile_stdio",
                              [](std::string_view in) { return stdio_attack(in); });
  knit::register_process_task("hostile_flood", [](std::string_view in) { return flood(in); });
  knit::register_process_task("hostile_bell", [](std::string_view in) { return bell_attack(in); });
  knit::register_process_task("hostile_proc", [](std::string_view in) { return proc_attack(in); });
  return true;
}();

}  // namespace
}  // namespace knit_test

// The attacks, each a process task run INSIDE a strict-sandboxed child. A task reports what
// it managed in words; the sandbox may stop it first, which fails its own call: either way
// the host must live on and keep serving (hostile.cpp checks that). Only public API here:
// the layout words below are an attacker's guess from the protocol's description, not
// knit's private headers.
#include "hostile_tasks.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <knit/process.hpp>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace hostile {
namespace {

using namespace std::chrono_literals;

std::string outcome(long r) { return r >= 0 ? "ok" : std::strerror(errno); }

// What an fd of this process is, by its /proc/self/fd link ("anon_inode:[eventfd]", ...).
std::string fd_kind(int fd) {
  char link[256];
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(path.c_str(), link, sizeof link - 1);
  return n > 0 ? std::string(link, static_cast<std::size_t>(n)) : std::string();
}

// Every fd of this process whose link starts with `prefix`.
std::vector<int> fds_of(std::string_view prefix) {
  std::vector<int> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) return fds;
  const int own = ::dirfd(dir);
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const int fd = std::atoi(e->d_name);
    if (fd != own && fd_kind(fd).starts_with(prefix)) fds.push_back(fd);
  }
  ::closedir(dir);
  return fds;
}

std::string echo(std::string_view in) { return std::string(in); }

// 1. Fds 1 and 2 made a signal source aimed at the host (SIGKILL on each I/O event), then
// flooded: had they shared an open file with the host's stderr pipe, the host's reader
// (or the host itself) would be killed by the kernel.
std::string stdio_sigkill(std::string_view in) {
  const pid_t host = static_cast<pid_t>(std::stol(std::string(in)));
  std::string r;
  for (int fd : {1, 2}) {
    r += "fd " + std::to_string(fd) + ": setown " + outcome(::fcntl(fd, F_SETOWN, host));
    r += ", setsig " + outcome(::fcntl(fd, F_SETSIG, SIGKILL));
    r += ", async " + outcome(::fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK)) + "; ";
  }
  const std::string block(4096, 'x');
  for (int fd : {1, 2}) {
    std::size_t written = 0;
    const auto until = std::chrono::steady_clock::now() + 2s;  // bounded: a full pipe waits
    while (written < (std::size_t{1} << 20) && std::chrono::steady_clock::now() < until) {
      const ssize_t n = ::write(fd, block.data(), block.size());
      if (n > 0) written += static_cast<std::size_t>(n);
      if (n < 0) std::this_thread::sleep_for(1ms);
    }
    r += "fd " + std::to_string(fd) + " wrote " + std::to_string(written) + "; ";
  }
  return r;
}

// 2. Every bell of the child jammed: eventfds one short of their maximum (the next write of 1
// blocks, or fails EAGAIN), pipes filled, and O_NONBLOCK cleared on all of them: an open
// file shared with the host would make the host's next send block for ever.
std::string block_request_bell(std::string_view) {
  std::string r;
  const std::uint64_t almost_max = 0xfffffffffffffffeULL;
  for (int fd : fds_of("anon_inode:[eventfd]")) {
    ::fcntl(fd, F_SETFL, O_NONBLOCK);
    r += "eventfd " + std::to_string(fd) + " " +
         outcome(::write(fd, &almost_max, sizeof almost_max)) + "; ";
  }
  const std::string block(4096, 'p');
  for (int fd : fds_of("pipe:")) {
    ::fcntl(fd, F_SETFL, O_NONBLOCK);
    std::size_t written = 0;
    for (int i = 0; i < 4096 && ::write(fd, block.data(), block.size()) > 0; ++i) {
      written += block.size();
    }
    r += "pipe " + std::to_string(fd) + " filled " + std::to_string(written) + "; ";
  }
  for (const char* kind : {"anon_inode:[eventfd]", "pipe:"}) {
    for (int fd : fds_of(kind)) {
      r += "fd " + std::to_string(fd) + " blocking " + outcome(::fcntl(fd, F_SETFL, 0)) + "; ";
    }
  }
  return r;
}

// 3. A thread that rings every eventfd for ever: the host's answer bell rung with no answer
// behind it. A host that wakes for each ring spins a CPU on it.
std::string spin_host(std::string_view) {
  const std::vector<int> bells = fds_of("anon_inode:[eventfd]");
  std::thread([bells] {
    const std::uint64_t one = 1;
    for (;;) {
      for (int fd : bells) (void)!::write(fd, &one, sizeof one);
    }
  }).detach();
  return "ok (" + std::to_string(bells.size()) + " eventfds)";
}

// 4. A well-formed answer pre-written for the next call in every lane (answer_seq =
// request_seq + 1, status ok, 6 bytes) and "forged" at the start of every arena page: a host
// that trusts a sequence number the child can predict takes it as the next call's answer.
std::string forge_next_answer(std::string_view) {
  const auto [from, to] = find_region();
  if (from == 0) return "no region found";
  auto word = [from](std::size_t offset) -> volatile std::uint64_t& {
    return *reinterpret_cast<volatile std::uint64_t*>(from + offset);
  };
  for (std::size_t lane = 128; lane + 64 <= 4096; lane += 64) {
    word(lane + 24) = word(lane) + 1;
    word(lane + 32) = 1;
    word(lane + 40) = 6;
  }
  for (std::uintptr_t page = from + 4096; page < to; page += 4096) {
    std::memcpy(reinterpret_cast<void*>(page), "forged", 6);
  }
  return "ok";
}

// 5. The host's memory and environment (HOSTILE_SECRET), and pid 1's environment. `in` is
// "<host pid> <address of the secret in the host>".
std::string read_host(std::string_view in) {
  std::istringstream words{std::string(in)};
  long pid = 0;
  std::uintptr_t address = 0;
  words >> pid >> std::hex >> address;
  auto slurp = [](const std::string& path, const std::string& label) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return label + "=denied:" + std::strerror(errno) + "; ";
    std::string got(65536, '\0');
    const ssize_t n = ::read(fd, got.data(), got.size());
    ::close(fd);
    if (n < 0) return label + "=denied(read):" + std::strerror(errno) + "; ";
    got.resize(static_cast<std::size_t>(n));
    for (char& c : got) c = c == '\0' ? ' ' : c;
    return label + "=read:" + got + "; ";
  };
  std::string r;
  const std::string mem = "/proc/" + std::to_string(pid) + "/mem";
  const int fd = ::open(mem.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    r += std::string("mem=denied:") + std::strerror(errno) + "; ";
  } else {
    char got[8] = {};
    const ssize_t n = ::pread(fd, got, sizeof got, static_cast<off_t>(address));
    r += n > 0 ? "mem=read:" + std::string(got, static_cast<std::size_t>(n)) + "; "
               : std::string("mem=opened, read ") + std::strerror(errno) + "; ";
    ::close(fd);
  }
  r += slurp("/proc/" + std::to_string(pid) + "/environ", "environ");
  // In a pid namespace of its own the child is pid 1: its own environment (a copy of the
  // host's, given at spawn) is no leak, so say whose it is.
  char self[32] = {};
  const bool init_is_self = ::readlink("/proc/self", self, sizeof self - 1) == 1 && self[0] == '1';
  r += init_is_self ? "init=self; " : "init=other; ";
  r += slurp("/proc/1/environ", "init_environ");
  return r;
}

// 6. A system call through another ABI, which a filter written for x86_64 numbers alone
// would let through under the wrong name: "i386" (int $0x80, eax 20 = getpid there) or
// "x32" (getpid with the x32 bit).
std::string foreign_abi(std::string_view in) {
#if defined(__x86_64__)
  long ret = 0;
  if (in == "i386") {
    asm volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
    return "i386 getpid returned " + std::to_string(ret);
  }
  ret = ::syscall(39 | 0x40000000);
  return "x32 getpid returned " + std::to_string(ret) + " (" + outcome(ret) + ")";
#else
  return "not x86_64: " + std::string(in) + " not tried";
#endif
}

// 7. The header page filled with 0xff..fe (the word where a refused call would be named
// among them), then a plain SIGSEGV: a host that believed the word over the kernel would
// report a sandbox violation, or print the forged number.
std::string forged_violation(std::string_view) {
  const auto [from, to] = find_region();
  if (from != 0) {
    auto* words = reinterpret_cast<volatile std::uint64_t*>(from);
    for (std::size_t i = 0; i < 4096 / 8; ++i) words[i] = 0xfffffffffffffffeULL;
  }
  static volatile std::uintptr_t null_address = 0;  // volatile: a real store, not a trap
  *reinterpret_cast<volatile int*>(null_address) = 1;
  return "survived a null write";
}

std::string sleep_then_crash(std::string_view) {
  std::this_thread::sleep_for(200ms);
  static volatile std::uintptr_t null_address = 0;
  *reinterpret_cast<volatile int*>(null_address) = 1;
  return "survived a null write";
}

// Sleeps `in` milliseconds.
std::string sleep_ms(std::string_view in) {
  std::this_thread::sleep_for(std::chrono::milliseconds(std::stol(std::string(in))));
  return "slept " + std::string(in);
}

}  // namespace

std::pair<std::uintptr_t, std::uintptr_t> find_region() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find("/memfd:knit-proc") == std::string::npos) continue;
    std::uintptr_t from = 0, to = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &from, &to) == 2) return {from, to};
  }
  return {0, 0};
}

void register_tasks() {
  knit::register_process_task("echo", echo);
  knit::register_process_task("stdio_sigkill", stdio_sigkill);
  knit::register_process_task("block_request_bell", block_request_bell);
  knit::register_process_task("spin_host", spin_host);
  knit::register_process_task("forge_next_answer", forge_next_answer);
  knit::register_process_task("read_host", read_host);
  knit::register_process_task("foreign_abi", foreign_abi);
  knit::register_process_task("forged_violation", forged_violation);
  knit::register_process_task("sleep_then_crash", sleep_then_crash);
  knit::register_process_task("sleep_ms", sleep_ms);
}

}  // namespace hostile

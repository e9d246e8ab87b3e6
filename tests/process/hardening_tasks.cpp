// The process tasks of the sandbox hardening tests (sandbox_hardening_test.cpp): a task
// gone wild that aims the kernel's SIGIO at the host, calls of foreign ABIs, a forged
// sandbox word, tries to shrink the shared region, and reads its own capabilities.
//
// Registered by a static initialiser, not by register_test_tasks (test_tasks.cpp is not
// this file's): host and child are the same binary, so both run it before main, in the same
// order, and their registries stay equal.
#include <dirent.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>

#include "knit/process.hpp"
#include "process/child_slot.hpp"

namespace knit_test {
namespace {

volatile std::uintptr_t null_address = 0;  // volatile: the compiler cannot prove it null

[[noreturn]] __attribute__((no_sanitize_undefined)) void write_through_null() {
  *reinterpret_cast<volatile int*>(null_address) = 1;
  std::abort();  // not reached
}

std::string outcome(long r) { return r >= 0 ? "ok" : std::strerror(errno); }

// Appends a word to a space-separated list (append, not " " + word: GCC 12's -Wrestrict
// misreads that concatenation).
void add(std::string& list, const std::string& word) {
  if (!list.empty()) list += ' ';
  list.append(word);
}

// The whole attack of a task with fcntl: a pipe of its own whose SIGIO goes to the host
// (its parent) as SIGKILL, then a write that makes the kernel send it. Input: "" for the
// whole, else one step alone on its own pipe, with harmless arguments (its own pid, signal
// 0), for the refusal of each command.
std::string fcntl_task(std::string_view step) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return "pipe: " + outcome(-1);
  std::string r;
  if (step.empty()) {
    add(r, outcome(::fcntl(p[0], F_SETOWN, ::getppid())));
    add(r, outcome(::fcntl(p[0], F_SETSIG, SIGKILL)));
    add(r, outcome(::fcntl(p[0], F_SETFL, ::fcntl(p[0], F_GETFL) | O_ASYNC)));
    add(r, outcome(::write(p[1], "x", 1)));
  } else if (step == "setown") {
    r = outcome(::fcntl(p[0], F_SETOWN, ::getpid()));
  } else if (step == "setown_ex") {
    f_owner_ex owner{F_OWNER_PID, ::getpid()};
    r = outcome(::fcntl(p[0], F_SETOWN_EX, &owner));
  } else if (step == "setsig") {
    r = outcome(::fcntl(p[0], F_SETSIG, 0));
  } else if (step == "async") {
    r = outcome(::fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK));
  } else if (step == "lease") {
    r = outcome(::fcntl(p[0], F_SETLEASE, F_UNLCK));
  } else if (step == "notify") {
    r = outcome(::fcntl(p[0], F_NOTIFY, 0));
  } else if (step == "pipe_size") {
    r = outcome(::fcntl(p[0], F_SETPIPE_SZ, 65536));
  } else if (step == "add_seals") {
    r = outcome(::fcntl(p[0], F_ADD_SEALS, F_SEAL_SEAL));
  } else if (step == "ioctl_fioasync") {
    int on = 1;
    r = outcome(::ioctl(p[0], FIOASYNC, &on));
  } else if (step == "ioctl_fiosetown") {
    int owner = ::getpid();
    r = outcome(::ioctl(p[0], FIOSETOWN, &owner));
  } else if (step == "allowed") {
    // What a task needs, each expected to work.
    int fd = ::fcntl(p[0], F_DUPFD_CLOEXEC, 10);
    add(r, outcome(fd));
    if (fd >= 0) ::close(fd);
    fd = ::fcntl(p[0], F_DUPFD, 10);
    add(r, outcome(fd));
    if (fd >= 0) ::close(fd);
    const int fd_flags = ::fcntl(p[0], F_GETFD);
    add(r, outcome(fd_flags));
    add(r, outcome(::fcntl(p[0], F_SETFD, fd_flags | FD_CLOEXEC)));
    const int fl = ::fcntl(p[0], F_GETFL);
    add(r, outcome(fl));
    add(r, outcome(::fcntl(p[0], F_SETFL, fl | O_NONBLOCK)));
    // A pipe has no seals: EINVAL, but the call itself is allowed.
    add(r, ::fcntl(p[0], F_GET_SEALS) < 0 && errno == EINVAL ? "ok" : "?");
  } else {
    r = "no such step";
  }
  ::close(p[0]);
  ::close(p[1]);
  return r;
}

// `int 0x80` with eax = 20 (i386 getpid): the i386 ABI from a 64-bit process.
std::string i386_call() {
#if defined(__x86_64__)
  long r = 20;
  asm volatile("int $0x80" : "+a"(r) : : "r8", "r9", "r10", "r11", "memory");
  return "i386 getpid: " + std::to_string(r);
#else
  return "not x86_64";
#endif
}

// An x32 call: getpid (x32 39) with the x32 bit.
std::string x32_call() {
#if defined(__x86_64__)
  return "x32 getpid: " + outcome(::syscall(39 | 0x40000000));
#else
  return "not x86_64";
#endif
}

// Tries to resize the region the host maps: through every memfd it holds, and through the
// mapping's /proc/self/map_files entry (a new open of the same memory). Grows first, then
// shrinks to 0 last: a region left shrunk is the one that would fault the host.
std::string resize_region() {
  std::string r;
  auto attempt = [&r](int fd, const std::string& what) {
    r += what + ": grow " + outcome(::ftruncate(fd, 64 << 20)) + ", shrink " +
         outcome(::ftruncate(fd, 0)) + "; ";
  };
  int found = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      char target[256] = {};
      const std::string link = std::string("/proc/self/fd/") + e->d_name;
      if (::readlink(link.c_str(), target, sizeof target - 1) <= 0) continue;
      // Only memfds: the child may share the host's stdio, whose files are not for a test
      // to truncate.
      if (std::string_view(target).rfind("/memfd:", 0) != 0) continue;
      ++found;
      attempt(std::atoi(e->d_name), std::string("fd ") + e->d_name);
    }
    ::closedir(d);
  }
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find("/memfd:") == std::string::npos) continue;  // the region: its only memfd
    const std::string range = line.substr(0, line.find(' '));
    const int fd = ::open(("/proc/self/map_files/" + range).c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      r += "map_files " + range + ": open " + outcome(fd) + "; ";
      continue;
    }
    ++found;
    attempt(fd, "map_files " + range);
    ::close(fd);
  }
  return "found " + std::to_string(found) + ": " + r;
}

// The uids and capability sets of this process, as /proc/self/status shows them: "Uid=0 0 0 0
// CapInh=... CapPrm=... CapEff=... CapBnd=... CapAmb=...".
std::string capabilities() {
  std::ifstream status("/proc/self/status");
  std::string r;
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Cap", 0) != 0 && line.rfind("Uid:", 0) != 0) continue;
    const auto colon = line.find(':');
    const auto value = line.find_first_not_of(" \t", colon + 1);
    if (!r.empty()) r += ' ';
    r += line.substr(0, colon) + "=" + line.substr(value);
  }
  return r;
}

[[maybe_unused]] const bool registered = [] {
  knit::register_process_task("hardening_fcntl",
                              [](std::string_view in) { return fcntl_task(in); });
  knit::register_process_task("hardening_i386", [](std::string_view) { return i386_call(); });
  knit::register_process_task("hardening_x32", [](std::string_view) { return x32_call(); });
  // The sandbox word written as a refusal would write it (or `in`, a number, instead), then a
  // crash that is no refusal: the host must call it a crash.
  knit::register_process_task("hardening_forged_word", [](std::string_view in) -> std::string {
    const knit::detail::child_slot s = knit::detail::current_child_slot();
    const std::uint64_t word = in.empty() ? ~std::uint64_t{0} : std::stoull(std::string(in));
    std::atomic_ref<std::uint64_t>(s.header->sandbox_syscall)
        .store(word, std::memory_order_release);
    write_through_null();
  });
  knit::register_process_task("hardening_resize_region",
                              [](std::string_view) { return resize_region(); });
  knit::register_process_task("hardening_capabilities",
                              [](std::string_view) { return capabilities(); });
  return true;
}();

}  // namespace
}  // namespace knit_test

// Only one knit-bench at a time: a flock'd lock file, and a scan for leftover servers
// and load generators (found by their binary's path in /proc, never killed by name).
#include "driver/system/single_instance.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "driver/system/identity.hpp"

namespace knit::bench {

instance_lock::instance_lock(const std::string& path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error("cannot open lock file " + path + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    char buf[256] = {0};
    ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "unknown";
    while (!holder.empty() && holder.back() == '\n') holder.pop_back();
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("another knit-bench is running (lock " + path + " held by " + holder +
                             "); refusing to start");
  }
  // Record who holds it, for the next driver's error message.
  std::string me = "PID " + std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, me.data(), me.size(), 0);
}

instance_lock::~instance_lock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

std::vector<pid_t> processes_running(const std::vector<std::string>& exes, pid_t self) {
  std::vector<std::string> want;
  for (const auto& e : exes) want.push_back(canonical_path(e));
  std::vector<pid_t> found;
  DIR* d = ::opendir("/proc");
  if (!d) return found;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid == self) continue;
    auto exe = read_exe(pid);
    if (!exe) continue;
    for (const auto& w : want)
      if (*exe == w) found.push_back(pid);
  }
  ::closedir(d);
  return found;
}

}  // namespace knit::bench

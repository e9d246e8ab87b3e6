// Only one knit-bench at a time: a flock'd lock file, and a scan for leftover servers
// and load generators (found by their binary's path in /proc, never killed by name).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace knit::bench {

class instance_lock {
 public:
  // Takes an exclusive, non-blocking flock on `path`. On failure throws
  // std::runtime_error naming the holder recorded in the file.
  explicit instance_lock(const std::string& path);
  ~instance_lock();
  instance_lock(const instance_lock&) = delete;
  instance_lock& operator=(const instance_lock&) = delete;

 private:
  int fd_ = -1;
};

// PIDs of running processes whose /proc/PID/exe is one of `exes` (canonical paths
// compared), excluding `self`. Two drivers measuring at once was the reference benchmark's third
// harness bug; a stray knit-load skews every number without failing anything.
std::vector<pid_t> processes_running(const std::vector<std::string>& exes, pid_t self);

}  // namespace knit::bench

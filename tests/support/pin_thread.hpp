// Pinning the calling thread to one CPU for a test's length (the spin gate and held wakes
// decide from the host's affinity mask when a pool is built).
#pragma once

#include <sched.h>

#include <vector>

namespace knit_test {

// The calling thread's CPUs now (empty if the mask cannot be read).
inline std::vector<int> my_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

// Pins the calling thread to `cpu` until it ends, then restores its mask.
class pin_host {
 public:
  explicit pin_host(int cpu) {
    CPU_ZERO(&saved_);
    ok_ = ::sched_getaffinity(0, sizeof saved_, &saved_) == 0;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ok_ = ok_ && ::sched_setaffinity(0, sizeof one, &one) == 0;
  }
  ~pin_host() { ::sched_setaffinity(0, sizeof saved_, &saved_); }
  pin_host(const pin_host&) = delete;
  pin_host& operator=(const pin_host&) = delete;
  bool ok() const { return ok_; }

 private:
  cpu_set_t saved_;
  bool ok_ = false;
};

}  // namespace knit_test

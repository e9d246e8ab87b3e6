// Shared pieces of the micro-benchmarks: CPU pinning, thread CPU clocks, and reading a
// thread's on-CPU nanoseconds from /proc (schedstat), which is exact where rusage ticks are not.
#pragma once

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <thread>

namespace knit_bench {

// CPUs used by the two-thread benchmarks: host on the first, worker on the second (or the
// same CPU when the machine has one). Overridable with KNIT_MICRO_CPUS="host,worker".
struct cpu_layout {
  int host = 0;
  int worker = 1;
};

inline cpu_layout layout() {
  cpu_layout l;
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 2) l.worker = 0;
  if (const char* e = std::getenv("KNIT_MICRO_CPUS")) std::sscanf(e, "%d,%d", &l.host, &l.worker);
  return l;
}

inline void pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

inline std::uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// Sum of on-CPU ns of this process's threads whose name starts with `prefix`.
inline std::uint64_t threads_cpu_ns(const std::string& prefix) {
  std::uint64_t total = 0;
  DIR* d = ::opendir("/proc/self/task");
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string dir = std::string("/proc/self/task/") + e->d_name;
    std::string comm;
    std::getline(std::ifstream(dir + "/comm"), comm);
    if (comm.rfind(prefix, 0) != 0) continue;
    std::uint64_t ns = 0;
    std::ifstream(dir + "/schedstat") >> ns;
    total += ns;
  }
  ::closedir(d);
  return total;
}

}  // namespace knit_bench

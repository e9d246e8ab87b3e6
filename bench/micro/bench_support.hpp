// Shared pieces of the micro-benchmarks: CPU pinning, thread CPU clocks, and reading a
// thread's on-CPU nanoseconds from /proc (schedstat), which is exact where rusage ticks are not.
#pragma once

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
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

// Times the calling thread has gone off its CPU (blocked, or preempted): each is a sleep
// and a wake the kernel paid for.
inline std::uint64_t thread_switches() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return static_cast<std::uint64_t>(u.ru_nvcsw) + static_cast<std::uint64_t>(u.ru_nivcsw);
}

// On-CPU ns of thread `tid` of this process, from its own CPU clock (the kernel's
// MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)), which adds the run time still pending on a
// thread that is running now on another CPU. /proc/PID/task/TID/schedstat and
// CLOCK_PROCESS_CPUTIME_ID do not (the latter adds only the calling thread's): a worker still
// spinning when a window opens is counted there as of its last tick or switch, and the
// window is charged with up to a tick of what it did before. 0 once the thread has ended.
inline std::uint64_t tid_cpu_ns(int tid) {
  const clockid_t id = static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6u);
  timespec ts{};
  if (clock_gettime(id, &ts) != 0) return 0;
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// Sum of on-CPU ns (tid_cpu_ns) of this process's threads for which keep(tid, name in
// /proc/self/task) is true.
template <class Keep>
std::uint64_t sum_threads_cpu_ns(Keep keep) {
  std::uint64_t total = 0;
  DIR* d = ::opendir("/proc/self/task");
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const int tid = std::atoi(e->d_name);
    if (keep(tid, e->d_name)) total += tid_cpu_ns(tid);
  }
  ::closedir(d);
  return total;
}

// Sum of on-CPU ns of this process's threads whose name starts with `prefix`.
inline std::uint64_t threads_cpu_ns(const std::string& prefix) {
  return sum_threads_cpu_ns([&prefix](int, const char* entry) {
    std::string comm;
    std::getline(std::ifstream(std::string("/proc/self/task/") + entry + "/comm"), comm);
    return comm.rfind(prefix, 0) == 0;
  });
}

// Sum of on-CPU ns of every thread of this process but the calling one.
inline std::uint64_t other_threads_cpu_ns() {
  const int self = static_cast<int>(::gettid());
  return sum_threads_cpu_ns([self](int tid, const char*) { return tid != self; });
}

}  // namespace knit_bench

// CPU accounting for a process from /proc (ticks and schedstat), its thread count,
// and a description of the machine (lscpu, uname).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace knit::bench {

struct CpuSample {
  double ticks_s = 0;              // (utime + stime) / CLK_TCK from /proc/PID/stat, as the seed did
  std::optional<double> sched_s;   // sum over /proc/PID/task/*/schedstat, ns precision
  double wall_s = 0;               // steady clock when the sample was taken
  int threads = 0;                 // num_threads from the same stat read
};

// Throws std::runtime_error when the process is gone.
CpuSample sample_cpu(pid_t pid);

// OS threads of the process: entries in /proc/PID/task.
int thread_count(pid_t pid);

// CPU consumed between two samples, in seconds. Prefers schedstat when both samples
// have it: a 2 s idle window is 200 ticks, too coarse for 0.002 cores.
struct CpuDelta {
  double ticks_s = 0;
  std::optional<double> sched_s;
  double wall_s = 0;
  double best_s() const { return sched_s ? *sched_s : ticks_s; }
  const char* source() const { return sched_s ? "schedstat" : "stat_ticks"; }
};
CpuDelta cpu_delta(const CpuSample& a, const CpuSample& b);

struct MachineInfo {
  std::string model;     // lscpu "Model name" (or /proc/cpuinfo)
  int cpus = 0;          // online CPUs
  std::string kernel;    // uname -r
  std::string hostname;
  std::string date;      // local time, ISO 8601
};
MachineInfo machine_info();

// Seconds on the steady clock (for wall-time deltas).
double now_s();

}  // namespace knit::bench

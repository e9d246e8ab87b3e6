// CPU accounting for a process from /proc (ticks and schedstat), its thread count, the
// whole machine's busy CPU from /proc/stat (to tell how much of a window went to others),
// and a description of the machine (lscpu, uname).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace knit::bench {

struct cpu_sample {
  double ticks_s =
      0;  // (utime + stime) / CLK_TCK from /proc/PID/stat, as the reference benchmark did
  std::optional<double> sched_s;  // sum over /proc/PID/task/*/schedstat, ns precision
  double wall_s = 0;              // steady clock when the sample was taken
  int threads = 0;                // num_threads from the same stat read
};

// Throws std::runtime_error when the process is gone.
cpu_sample sample_cpu(pid_t pid);

// OS threads of the process: entries in /proc/PID/task.
int thread_count(pid_t pid);

// CPU consumed between two samples, in seconds. Prefers schedstat when both samples
// have it: a 2 s idle window is 200 ticks, too coarse for 0.002 cores.
struct cpu_usage {
  double ticks_s = 0;
  std::optional<double> sched_s;
  double wall_s = 0;
  double best_s() const { return sched_s ? *sched_s : ticks_s; }
  const char* source() const { return sched_s ? "schedstat" : "stat_ticks"; }
};
cpu_usage cpu_delta(const cpu_sample& a, const cpu_sample& b);

// The whole machine's CPU from the aggregate "cpu" line of /proc/stat, in seconds.
// busy = user + nice + system (guest time is already inside user/nice): the time processes
// ran. irq and softirq are not busy here: on loopback the measured traffic's own network
// work runs as softirq and belongs to no process. idle and iowait are not busy; steal (a hypervisor
// running someone else on our vCPUs) is kept apart: it slows a window without being a process on
// this machine.
struct machine_cpu_sample {
  double busy_s = 0;
  double steal_s = 0;
  double wall_s = 0;  // steady clock when the sample was taken
};

// Parses the text of /proc/stat; ticks are divided by ticks_per_s (CLK_TCK).
// Throws std::runtime_error when there is no aggregate "cpu" line with >= 8 fields.
machine_cpu_sample parse_proc_stat(const std::string& text, double ticks_per_s);
// Reads /proc/stat now.
machine_cpu_sample sample_machine_cpu();

// CPU of this process and of its children that have been waited for (getrusage SELF +
// CHILDREN), in seconds: over a window, the driver plus the load generator it reaped.
double own_and_reaped_children_cpu_s();

// Cores of CPU the machine spent outside the measured processes over a window:
// (machine busy - server - driver and generator) / wall, floored at 0 (tick rounding can
// make the difference slightly negative on an otherwise idle machine).
double foreign_cores(const machine_cpu_sample& a, const machine_cpu_sample& b, double server_cpu_s,
                     double own_cpu_s);

struct machine_description {
  std::string model;   // lscpu "Model name" (or /proc/cpuinfo)
  int cpus = 0;        // online CPUs
  std::string kernel;  // uname -r
  std::string hostname;
  std::string date;  // local time, ISO 8601
};
machine_description machine_info();

// Seconds on the steady clock (for wall-time deltas).
double now_s();

}  // namespace knit::bench

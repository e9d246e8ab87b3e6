// A started process and everything it started: found from /proc (descendants by parent
// PID, plus its process group), its CPU summed over all of them, and ended by PID.
// An external peer (nginx: a master and workers) is measured and stopped as a whole.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "driver/system/cpu_sampler.hpp"

namespace knit::bench {

// One process as /proc/PID/stat shows it. start_ticks (field 22) tells a process from a
// later one that reuses its PID.
struct proc_entry {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgid = 0;
  unsigned long long start_ticks = 0;
  char state = '?';
  bool operator==(const proc_entry&) const = default;
};

// Parses one /proc/PID/stat line (comm may hold spaces and parentheses). False when short.
bool parse_proc_entry(const std::string& stat_line, proc_entry& out);

// Every process now (unreadable ones skipped).
std::vector<proc_entry> list_processes();

// `root`, its descendants and every process in the group `root` leads (spawn_process
// puts each child in a group of its own), root first; zombies excluded except root.
// A pure function over a listing, and the same over /proc now.
std::vector<proc_entry> process_tree(pid_t root, const std::vector<proc_entry>& all);
std::vector<proc_entry> process_tree(pid_t root);

// True while this very process (same PID and start time) exists and is not a zombie.
bool still_running(const proc_entry& p);

// CPU of a process tree at one moment, per process.
struct tree_cpu_sample {
  std::map<pid_t, cpu_sample> procs;
  std::map<pid_t, unsigned long long> start_ticks;
  double wall_s = 0;
  int threads() const;
};
tree_cpu_sample sample_tree_cpu(pid_t root);

// CPU between two samples, summed over the processes: those in both count their
// difference, those that appeared count all of theirs (they started in between), those
// that exited in between are lost (their last slice is missing from the sum).
cpu_usage tree_cpu_delta(const tree_cpu_sample& a, const tree_cpu_sample& b);

}  // namespace knit::bench

// A started process and everything it started: found from /proc (descendants by parent
// PID, plus its process group), its CPU summed over all of them, and ended by PID.
#include "driver/system/process_tree.hpp"

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

namespace knit::bench {
namespace {

bool read_entry(pid_t pid, proc_entry& out) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  return in && std::getline(in, line) && parse_proc_entry(line, out);
}

}  // namespace

bool parse_proc_entry(const std::string& stat_line, proc_entry& out) {
  auto rp = stat_line.rfind(')');
  if (rp == std::string::npos || rp + 2 > stat_line.size()) return false;
  std::istringstream head(stat_line.substr(0, stat_line.find(' ')));
  long pid = 0;
  if (!(head >> pid)) return false;
  std::istringstream fs(stat_line.substr(rp + 2));
  std::vector<std::string> f;
  std::string tok;
  while (fs >> tok) f.push_back(tok);
  // f[0] is field 3 (state): ppid is field 4, pgrp 5, starttime 22.
  if (f.size() < 20) return false;
  try {
    out.pid = static_cast<pid_t>(pid);
    out.state = f[0].empty() ? '?' : f[0][0];
    out.ppid = static_cast<pid_t>(std::stol(f[1]));
    out.pgid = static_cast<pid_t>(std::stol(f[2]));
    out.start_ticks = std::stoull(f[19]);
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

std::vector<proc_entry> list_processes() {
  std::vector<proc_entry> v;
  DIR* d = ::opendir("/proc");
  if (!d) return v;
  while (dirent* e = ::readdir(d)) {
    if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
    proc_entry p;
    if (read_entry(static_cast<pid_t>(std::stol(e->d_name)), p)) v.push_back(p);
  }
  ::closedir(d);
  return v;
}

std::vector<proc_entry> process_tree(pid_t root, const std::vector<proc_entry>& all) {
  std::vector<proc_entry> tree;
  std::set<pid_t> in;
  auto root_it =
      std::find_if(all.begin(), all.end(), [&](const proc_entry& p) { return p.pid == root; });
  if (root_it != all.end()) {
    tree.push_back(*root_it);
    in.insert(root);
  }
  // Descendants: repeat until no process joins (a listing is not ordered parent first).
  for (bool grew = true; grew;) {
    grew = false;
    for (const proc_entry& p : all) {
      if (in.count(p.pid) || p.state == 'Z' || p.state == 'X') continue;
      if (in.count(p.ppid) || p.pgid == root) {
        tree.push_back(p);
        in.insert(p.pid);
        grew = true;
      }
    }
  }
  return tree;
}

std::vector<proc_entry> process_tree(pid_t root) { return process_tree(root, list_processes()); }

bool still_running(const proc_entry& p) {
  proc_entry now;
  if (!read_entry(p.pid, now)) return false;
  return now.start_ticks == p.start_ticks && now.state != 'Z' && now.state != 'X';
}

int tree_cpu_sample::threads() const {
  int n = 0;
  for (const auto& [pid, s] : procs) n += s.threads;
  return n;
}

tree_cpu_sample sample_tree_cpu(pid_t root) {
  tree_cpu_sample t;
  t.wall_s = now_s();
  for (const proc_entry& p : process_tree(root)) {
    try {
      t.procs[p.pid] = sample_cpu(p.pid);
      t.start_ticks[p.pid] = p.start_ticks;
    } catch (const std::exception&) {
      // It exited between the listing and the read: it has nothing left to count.
    }
  }
  return t;
}

cpu_usage tree_cpu_delta(const tree_cpu_sample& a, const tree_cpu_sample& b) {
  cpu_usage d;
  double sched = 0;
  bool all_sched = true;
  for (const auto& [pid, sb] : b.procs) {
    auto it = a.procs.find(pid);
    const bool both = it != a.procs.end() && a.start_ticks.at(pid) == b.start_ticks.at(pid);
    if (!both) {
      // It appeared in between: everything it used falls inside the interval.
      d.ticks_s += sb.ticks_s;
      if (sb.sched_s) sched += *sb.sched_s;
      else all_sched = false;
      continue;
    }
    const cpu_sample& sa = it->second;
    d.ticks_s += sb.ticks_s - sa.ticks_s;
    if (sb.sched_s && sa.sched_s) sched += *sb.sched_s - *sa.sched_s;
    else all_sched = false;
  }
  if (all_sched && !b.procs.empty()) d.sched_s = sched;
  d.wall_s = b.wall_s - a.wall_s;
  return d;
}

}  // namespace knit::bench

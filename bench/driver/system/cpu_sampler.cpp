// CPU accounting for a process from /proc (ticks and schedstat), its thread count, the
// whole machine's busy CPU from /proc/stat, and a description of the machine (lscpu, uname).
#include "driver/system/cpu_sampler.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "driver/system/spawn.hpp"

namespace knit::bench {
namespace {

std::string proc(pid_t pid) { return "/proc/" + std::to_string(pid); }

std::vector<std::string> task_ids(pid_t pid) {
  std::vector<std::string> ids;
  DIR* d = ::opendir((proc(pid) + "/task").c_str());
  if (!d) return ids;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ids.emplace_back(e->d_name);
  ::closedir(d);
  return ids;
}

std::string trim(const std::string& s) {
  auto a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  auto b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

}  // namespace

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

cpu_sample sample_cpu(pid_t pid) {
  cpu_sample s;
  s.wall_s = now_s();
  std::ifstream in(proc(pid) + "/stat");
  std::string stat;
  if (!in || !std::getline(in, stat))
    throw std::runtime_error("process " + std::to_string(pid) + " is gone");
  // comm (field 2) may contain spaces and parentheses: fields resume after the last ')'.
  auto rp = stat.rfind(')');
  if (rp == std::string::npos)
    throw std::runtime_error("unreadable /proc/" + std::to_string(pid) + "/stat");
  std::istringstream fs(stat.substr(rp + 2));
  std::vector<std::string> f;
  std::string tok;
  while (fs >> tok) f.push_back(tok);
  // f[0] is field 3 (state): utime is field 14, stime 15, num_threads 20.
  if (f.size() < 18) throw std::runtime_error("short /proc/" + std::to_string(pid) + "/stat");
  static const double tck = static_cast<double>(::sysconf(_SC_CLK_TCK));
  s.ticks_s = (std::stod(f[11]) + std::stod(f[12])) / tck;
  s.threads = std::stoi(f[17]);

  // schedstat's first field is the task's on-CPU time in ns. Threads that exited
  // mid-window drop out of this sum (stat keeps them), which is why both are kept.
  double ns = 0;
  bool any = false;
  for (const auto& tid : task_ids(pid)) {
    std::ifstream ss(proc(pid) + "/task/" + tid + "/schedstat");
    double v = 0;
    if (ss >> v) {
      ns += v;
      any = true;
    }
  }
  if (any) s.sched_s = ns / 1e9;
  return s;
}

int thread_count(pid_t pid) { return static_cast<int>(task_ids(pid).size()); }

cpu_usage cpu_delta(const cpu_sample& a, const cpu_sample& b) {
  cpu_usage d;
  d.ticks_s = b.ticks_s - a.ticks_s;
  if (a.sched_s && b.sched_s) d.sched_s = *b.sched_s - *a.sched_s;
  d.wall_s = b.wall_s - a.wall_s;
  return d;
}

machine_cpu_sample parse_proc_stat(const std::string& text, double ticks_per_s) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    // The aggregate line is "cpu" then spaces; "cpu0".. are per-CPU lines.
    if (line.size() < 4 || line.compare(0, 4, "cpu ") != 0) continue;
    std::istringstream fs(line.substr(4));
    std::vector<double> f;
    double v = 0;
    while (fs >> v) f.push_back(v);
    // user nice system idle iowait irq softirq steal [guest guest_nice]
    if (f.size() < 8) throw std::runtime_error("/proc/stat: short cpu line: " + line);
    machine_cpu_sample s;
    // irq and softirq are left out: on loopback the kernel's network work for the measured
    // traffic itself runs as softirq (0.47 cores of it at 72,000 rps here) and belongs to no
    // process, so counting it would call the benchmark's own traffic foreign load.
    s.busy_s = (f[0] + f[1] + f[2]) / ticks_per_s;
    s.steal_s = f[7] / ticks_per_s;
    s.wall_s = now_s();
    return s;
  }
  throw std::runtime_error("/proc/stat: no aggregate cpu line");
}

machine_cpu_sample sample_machine_cpu() {
  std::ifstream in("/proc/stat");
  std::stringstream text;
  text << in.rdbuf();
  static const double tck = static_cast<double>(::sysconf(_SC_CLK_TCK));
  return parse_proc_stat(text.str(), tck);
}

double own_and_reaped_children_cpu_s() {
  auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  rusage self{}, children{};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &children);
  return secs(self.ru_utime) + secs(self.ru_stime) + secs(children.ru_utime) +
         secs(children.ru_stime);
}

double foreign_cores(const machine_cpu_sample& a, const machine_cpu_sample& b, double server_cpu_s,
                     double own_cpu_s) {
  const double wall = b.wall_s - a.wall_s;
  if (wall <= 0) return 0;
  return std::max(0.0, (b.busy_s - a.busy_s - server_cpu_s - own_cpu_s) / wall);
}

machine_description machine_info() {
  machine_description m;
  if (auto out = capture_output({"lscpu"})) {
    std::istringstream ls(*out);
    std::string line;
    while (std::getline(ls, line))
      if (line.rfind("Model name:", 0) == 0) m.model = trim(line.substr(11));
  }
  if (m.model.empty()) {
    std::ifstream ci("/proc/cpuinfo");
    std::string line;
    while (std::getline(ci, line))
      if (line.rfind("model name", 0) == 0) {
        m.model = trim(line.substr(line.find(':') + 1));
        break;
      }
  }
  if (m.model.empty()) m.model = "unknown";
  m.cpus = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  utsname u{};
  if (::uname(&u) == 0) {
    m.kernel = std::string(u.sysname) + " " + u.release;
    m.hostname = u.nodename;
  }
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S %z", std::localtime(&t));
  m.date = buf;
  return m;
}

}  // namespace knit::bench

// CPU accounting for a process from /proc (ticks and schedstat), its thread count,
// and a description of the machine (lscpu, uname).
#include "driver/cpu_sampler.hpp"

#include <dirent.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "driver/spawn.hpp"

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

CpuSample sample_cpu(pid_t pid) {
  CpuSample s;
  s.wall_s = now_s();
  std::ifstream in(proc(pid) + "/stat");
  std::string stat;
  if (!in || !std::getline(in, stat)) throw std::runtime_error("process " + std::to_string(pid) + " is gone");
  // comm (field 2) may contain spaces and parentheses: fields resume after the last ')'.
  auto rp = stat.rfind(')');
  if (rp == std::string::npos) throw std::runtime_error("unreadable /proc/" + std::to_string(pid) + "/stat");
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

CpuDelta cpu_delta(const CpuSample& a, const CpuSample& b) {
  CpuDelta d;
  d.ticks_s = b.ticks_s - a.ticks_s;
  if (a.sched_s && b.sched_s) d.sched_s = *b.sched_s - *a.sched_s;
  d.wall_s = b.wall_s - a.wall_s;
  return d;
}

MachineInfo machine_info() {
  MachineInfo m;
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

// knit-process-hop: where one process call's time goes, hop by hop (docs/process-workers.md).
// One call at a time, N calls of an echo task of B bytes, two ways:
//   ring    knit::submit_process on a one-worker pool: host -> child and back through the
//           host's ring (src/process/process_ring.hpp), no worker thread between;
//   thread  pool.submit of the same echo as a thread task: host -> pool worker thread.
// The modes pool (host -> pool worker thread -> child) and direct (run_process_task on the
// calling thread) went with the proxy path; asking for one exits 2 naming it.
// Per call it prints the wall time (p50, mean), the CPU of every party (schedstat: the host
// thread, the process's other threads — the pool worker and the starter —, the child), and
// each party's voluntary context switches (a switch is a sleep, so a wake to come). Run it
// under `strace -f -c` for the system calls per call (the script divides by N).
//   knit-process-hop ring|thread [calls] [bytes] [spin us]   (default 20000 calls, 0 bytes,
//   20 µs)
#include <dirent.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "knit/pool.hpp"
#include "knit/process.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

struct party {
  long long cpu_ns = 0;
  long long voluntary = 0;
};

// One task's CPU (schedstat, ns) and voluntary switches.
party read_task(const std::string& dir) {
  party p;
  std::ifstream sched(dir + "/schedstat");
  sched >> p.cpu_ns;
  std::ifstream status(dir + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("voluntary_ctxt_switches:", 0) == 0) p.voluntary = std::atoll(line.c_str() + 24);
  }
  return p;
}

// Every task of `pid` but `except` (a tid), summed.
party read_tasks(int pid, long except) {
  party sum;
  const std::string base = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(base.c_str());
  if (!d) return sum;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.' || std::atol(e->d_name) == except) continue;
    const party p = read_task(base + "/" + e->d_name);
    sum.cpu_ns += p.cpu_ns;
    sum.voluntary += p.voluntary;
  }
  ::closedir(d);
  return sum;
}

struct snapshot {
  party host, others, child;
};

snapshot take(int child_pid) {
  const long self = ::gettid();
  return {read_task("/proc/self/task/" + std::to_string(self)), read_tasks(::getpid(), self),
          child_pid > 0 ? read_tasks(child_pid, 0) : party{}};
}

}  // namespace

int main(int argc, char** argv) {
  knit::register_process_task("echo", [](std::string_view in) { return std::string(in); });
  knit::register_process_task("pid", [](std::string_view) { return std::to_string(::getpid()); });
  if (knit::worker_main(argc, argv)) return 0;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "pool" || mode == "direct") {
    // Said apart from a bad usage: a script of the proxy-path days gets told what changed.
    std::fprintf(stderr,
                 "knit-process-hop: mode '%s' was removed with the proxy path; ring is the "
                 "process path now\n",
                 mode.c_str());
    return 2;
  }
  const int n = argc > 2 ? std::atoi(argv[2]) : 20000;
  const long bytes = argc > 3 ? std::atol(argv[3]) : 0;
  const int spin_us = argc > 4 ? std::atoi(argv[4]) : 20;
  if ((mode != "ring" && mode != "thread") || n < 10 || bytes < 0 || bytes > (1L << 20) ||
      spin_us < 0 || spin_us > 1'000'000) {
    std::fprintf(stderr,
                 "usage: knit-process-hop ring|thread [calls >= 10] [bytes 0..1 MiB] [spin us]\n");
    return 2;
  }
  knit::pool_options pool_options;
  pool_options.threads = 1;
  pool_options.process.spin = std::chrono::microseconds(spin_us);
  knit::pool pool(pool_options);
  const std::string payload(static_cast<std::size_t>(bytes), 'x');

  auto one = [&](const std::string& task) -> std::string {
    std::string out;
    bool done = false;
    auto handler = [&](knit::result<std::string> r) {
      if (!r.ok()) {
        std::fprintf(stderr, "knit-process-hop: %s\n", knit::failure_message(r).c_str());
        std::exit(1);
      }
      out = std::move(r.value());
      done = true;
    };
    if (mode == "ring") {
      if (knit::submit_process(pool, task, payload, handler)) std::exit(1);
    } else if (pool.submit([](std::string in) { return in; }, std::string(payload), handler)) {
      std::exit(1);
    }
    while (!done) {
      pollfd fd{pool.completion_fd(), POLLIN, 0};
      ::poll(&fd, 1, 100);
      pool.drain();
    }
    return out;
  };
  const int child = mode == "thread" ? 0 : std::atoi(one("pid").c_str());
  for (int i = 0; i < n / 10; ++i) one("echo");  // warm-up
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(n));
  const snapshot a = take(child);
  for (int i = 0; i < n; ++i) {
    const auto t0 = clock_type::now();
    if (one("echo").size() != payload.size()) return 1;
    us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
  }
  const snapshot b = take(child);
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double v : us) sum += v;
  const double calls = n;
  auto cpu = [&](const party& x, const party& y) { return (y.cpu_ns - x.cpu_ns) / 1e3 / calls; };
  auto sw = [&](const party& x, const party& y) { return (y.voluntary - x.voluntary) / calls; };
  std::printf(
      "%-6s bytes %7ld spin %3d us  calls %d  wall us p50 %7.1f mean %7.1f  | cpu us/call: host "
      "%5.2f  others %5.2f  child %5.2f  total %5.2f | sleeps/call: host %4.2f  others %4.2f  "
      "child %4.2f\n",
      mode.c_str(), bytes, spin_us, n, us[us.size() / 2], sum / calls, cpu(a.host, b.host),
      cpu(a.others, b.others), cpu(a.child, b.child),
      cpu(a.host, b.host) + cpu(a.others, b.others) + cpu(a.child, b.child), sw(a.host, b.host),
      sw(a.others, b.others), sw(a.child, b.child));
  return 0;
}

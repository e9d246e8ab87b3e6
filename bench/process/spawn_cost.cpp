// knit-spawn-cost: what a worker process's start costs, with and without the namespaces a
// strict child gets (docs/process-workers.md, "Threat model"): the median and p90 of N
// spawns (spawn_child: clone or posix_spawn to the exec) and of N starts (start_child: the
// spawn and the handshake), each child killed and reaped before the next.
//   knit-spawn-cost [strict|off] [--no-namespaces] [N]
//   strict (default): the strict sandbox, in new user, PID, mount and network namespaces
//   where the kernel allows them; --no-namespaces: strict without them (as under a
//   RestrictNamespaces=yes unit); off: no sandbox. N: 100 by default.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "knit/process.hpp"
#include "process/namespaces.hpp"
#include "process/spawn.hpp"
#include "process/starter.hpp"
#include "worker_thread.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

double at(std::vector<double>& v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  knit::register_process_task("echo", [](std::string_view in) { return std::string(in); });
  if (knit::worker_main(argc, argv)) return 0;
  bool strict = true;
  bool namespaces = true;
  int n = 100;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "strict") {
      strict = true;
    } else if (a == "off") {
      strict = false;
    } else if (a == "--no-namespaces") {
      namespaces = false;
    } else if (const int v = std::atoi(argv[i]); v > 0 && v <= 100000) {
      n = v;
    } else {
      std::fprintf(stderr, "usage: knit-spawn-cost [strict|off] [--no-namespaces] [N]\n");
      return 2;
    }
  }
  if (!namespaces) knit::detail::refuse_namespaces("knit-spawn-cost --no-namespaces");
  knit::process_options o;
  o.sandbox = strict ? knit::process_sandbox::strict : knit::process_sandbox::off;
  knit::detail::region_sandbox rs;
  rs.strict = strict ? 1 : 0;
  std::vector<double> spawn_ms, start_ms;
  for (int i = 0; i < n; ++i) {
    auto t0 = clock_type::now();
    knit::detail::child_process c =
        knit::detail::spawn_child("/proc/self/exe", 1, o.arena_bytes, o.lanes, 0, rs);
    spawn_ms.push_back(ms_since(t0));
    knit::detail::end_child(c, true);
    t0 = clock_type::now();
    knit::detail::child_process d =
        knit::detail::start_child(1, o, knit::detail::building_thread_cpus());  // its own mask
    start_ms.push_back(ms_since(t0));
    knit::detail::end_child(d, true);
  }
  const knit::process_confinement c = knit::current_process_confinement();
  std::printf(
      "%s, namespaces %s%s%s: %d spawns median %.3f ms p90 %.3f; starts (spawn + "
      "handshake) median %.3f ms p90 %.3f\n",
      strict ? "strict" : "off", c.namespaces ? "on" : "off", c.why_not.empty() ? "" : " - ",
      c.why_not.c_str(), n, at(spawn_ms, 0.5), at(spawn_ms, 0.9), at(start_ms, 0.5),
      at(start_ms, 0.9));
  return 0;
}

// knit-bench: runs benchmark plans and re-renders reports. The command line is parsed in
// driver/cli.cpp (knit-bench --help); this file turns it into a run, a report or a plan.
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "driver/cli.hpp"
#include "driver/report/report.hpp"
#include "driver/run/builtin_plans.hpp"
#include "driver/run/cpu_list.hpp"
#include "driver/run/json_write.hpp"
#include "driver/run/peers.hpp"
#include "driver/run/plan.hpp"
#include "driver/run/runner.hpp"

namespace {

using namespace knit::bench;

[[noreturn]] void usage_error(const std::string& msg) {
  std::cerr << "knit-bench: " << msg << "\n(knit-bench --help, knit-bench run --help)\n";
  std::exit(2);
}

// Directory of this executable: knit-server and knit-load are built beside it.
std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  return std::filesystem::path(std::string(buf, static_cast<size_t>(n))).parent_path().string();
}

std::string stamp() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&t));
  return buf;
}

// A built-in plan, from the JSON embedded at build time (tests check each one parses).
builtin_plan builtin(const std::string& which, const std::vector<std::string>& profiles) {
  try {
    return load_builtin_plan(which, profiles);
  } catch (const plan_error& e) {
    std::cerr << "knit-bench: " << e.what() << "\n";
    std::exit(2);
  }
}

int cmd_plan(const bench_command& c) {
  builtin_plan p = builtin(c.builtin_name, c.profiles);
  std::cout << to_json_pretty(plan_to_json(p.cases));
  std::cerr << "knit-bench: " << p.name << " plan, " << p.cases.size() << " cases x " << p.repeat
            << " repetition(s): about "
            << clock_text(estimate_s(static_cast<int>(p.cases.size()) * p.repeat, p.idle_s,
                                     p.warmup_s, p.window_s))
            << " (mm:ss) on the machine it was sized for, before reruns for foreign load\n";
  return 0;
}

int cmd_report(const bench_command& c) {
  const std::string& rows = c.rows_path;
  const bool charts = c.charts;
  try {
    std::vector<std::string> warnings;
    std::string out = write_report(rows, charts, &warnings);
    for (const auto& w : warnings) std::cerr << "knit-bench: warning: " << w << "\n";
    std::cerr << "knit-bench: wrote " << out << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "knit-bench: " << e.what() << "\n";
    return 1;
  }
}

int cmd_run(bench_command& c) {
  run_options cfg = std::move(c.run);
  const std::string& plan_file = c.plan_file;
  const std::string& builtin_name = c.builtin_name;
  const std::vector<std::string>& profiles = c.profiles;
  const std::string server = c.server_exe.empty() ? self_dir() + "/knit-server" : c.server_exe;
  const std::string load = c.load_exe.empty() ? self_dir() + "/knit-load" : c.load_exe;
  if (!plan_file.empty()) {
    try {
      // An array of cases runs with the sizing below; a plan object brings its own.
      plan_file_contents f = read_plan_file(plan_file, profiles);
      cfg.cases = std::move(f.cases);
      if (f.sizing) static_cast<plan_sizing&>(cfg) = *f.sizing;
    } catch (const std::exception& e) {
      std::cerr << "knit-bench: " << e.what() << "\n";
      return 2;
    }
    cfg.plan_name = plan_file;
  } else {
    builtin_plan p = builtin(builtin_name, profiles);
    cfg.plan_name = p.name;
    cfg.cases = p.cases;
    static_cast<plan_sizing&>(cfg) = p;
  }
  try {
    add_peer_cases(cfg.cases, c.peers);
  } catch (const plan_error& e) {
    usage_error(e.what());
  }
  if (c.idle_s) cfg.idle_s = *c.idle_s;
  if (c.warmup_s) cfg.warmup_s = *c.warmup_s;
  if (c.window_s) cfg.window_s = *c.window_s;
  if (c.repeat) cfg.repeat = *c.repeat;
  if (c.conns) cfg.conns = *c.conns;
  if (cfg.window_s <= 0) usage_error("--duration must be > 0");
  if (cfg.idle_s <= 0) usage_error("--idle must be > 0 (idle CPU is part of every row)");
  // Default layout: the server and the generator never share a CPU where there are at
  // least two. The generator gets the last quarter of the CPUs (the plan's gen_cpu_share;
  // at least one), the server the rest; on a 2-CPU machine that is server 0, generator 1.
  // Set either flag to choose, e.g. --server-cpus 0-1 --gen-cpus 0-1 for a shared layout.
  if (cfg.server_cpus.empty() && cfg.gen_cpus.empty()) {
    cpu_split split =
        split_cpus(static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)), cfg.gen_cpu_share);
    cfg.server_cpus = std::move(split.server);
    cfg.gen_cpus = std::move(split.gen);
  }
  cfg.server_exe = std::filesystem::absolute(server).string();
  cfg.load_exe = std::filesystem::absolute(load).string();
  if (cfg.out_dir.empty()) {
    std::string name = builtin_name.empty() ? "plan" : builtin_name;
    cfg.out_dir = "bench-out/" + name + "-" + stamp();
  }
  return run_benchmark(cfg);
}

}  // namespace

int main(int argc, char** argv) {
  bench_command c;
  try {
    c = parse_command_line(std::vector<std::string>(argv, argv + argc));
  } catch (const cli_help& h) {
    std::cout << h.what();
    return 0;
  } catch (const cli_error& e) {
    usage_error(e.what());
  }
  switch (c.what) {
    case bench_command::kind::run: return cmd_run(c);
    case bench_command::kind::report: return cmd_report(c);
    case bench_command::kind::plan: return cmd_plan(c);
  }
  return 2;
}

// knit-bench: command line for running benchmark plans and re-rendering reports.
#include <unistd.h>
#include <algorithm>

#include <climits>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "driver/builtin_plans.hpp"
#include "driver/cpu_list.hpp"
#include "driver/json_write.hpp"
#include "driver/peers.hpp"
#include "driver/plan.hpp"
#include "driver/report.hpp"
#include "driver/runner.hpp"
#include "driver/spawn.hpp"

namespace {

using namespace knit::bench;

const char* const kUsage = R"(usage:
  knit-bench run [--plan FILE.json | --default | --full | --cost-sweep | --hosts-sweep
                  | --hosts-sweep-small | --fleet] [options]
  knit-bench report DIR/rows.jsonl [--no-charts]
  knit-bench plan (--default | --full | --cost-sweep | --hosts-sweep | --hosts-sweep-small
                  | --fleet)
                  [--profiles LIST]        print a built-in plan as JSON

run options:
  --out DIR            output directory (rows.jsonl, meta.json, report.md, charts/, logs/)
                       default: bench-out/<plan>-<date>-<time>
  --repeat N           repetitions, interleaved (A B A B ...); report shows median and min-max
  --idle S             idle window with no load (CPU while idle)
  --warmup S           warm-up load before the window
  --duration S         measured window
  --conns N            connections per route (default: the plan's, 50; --full: 100)
  --rate-fraction F    rate cases offer F x the inline saturating total (default 0.7)
  --profiles LIST      cost profiles for built-in plans and plan objects, e.g. bun,native
  --server PATH        knit-server binary (default: beside knit-bench)
  --load PATH          knit-load binary (default: beside knit-bench)
  --server-cpus LIST   pin the server, e.g. 0 or 0-1 (default: all but the generator's CPUs)
  --gen-cpus LIST      pin knit-load, e.g. 1 (default: the last quarter of the CPUs, at least
                       one; the hosts sweeps: the last half). A plan with "separate_cpus"
                       (the hosts sweeps) refuses lists that overlap
  --gen-threads N      knit-load --threads (default: one per generator CPU)
  --host H             default 127.0.0.1
  --port P             default 3000
  --append             add rows to an existing --out directory
  --no-charts          skip the gnuplot charts
  --lock PATH          single-instance lock file (default /tmp/knit-bench.lock)
  --foreign-max C      a window in which the machine spent more than C cores outside the
                       server, knit-load and knit-bench (from /proc/stat) is measured again
                       (default 0.1)
  --foreign-retries N  at most N times (default 2); the quietest attempt is kept, and
                       flagged in its row and the report if still over --foreign-max
  --peer NAME=COMMAND  an external server measured like every case (repeatable): run as
                       /bin/sh -c COMMAND with PORT and HOST set and {port} / {host}
                       replaced, pinned like the server, in the foreground (it must not
                       daemonize); one case per load mode, tag NAME, server_mode peer:NAME
  --peer-routes NAME=LIST  the routes peer NAME serves, e.g. nginx=ping (default: all
                       three); it is loaded on those only
  --peer-timeout S     a peer must accept connections within S seconds (default 10)
  --fleet-script PATH  what runs a case with "fleet": N (N instances behind HAProxy; default
                       deploy/fleet.sh of the source tree knit-bench was built from)

Plans are JSON arrays of cases (or objects with sizing and profiles, like bench/plans/full.json):
  {"tag":"t4","mode":"sat"|"rate","server_mode":"inline"|"pooled"|"asio"|"multi"|"auto","threads":4,
   "hosts":H,"spin":""|"0","park":""|"1","doorbell":""|"0"|"1","steal":""|"0"|"1",
   "env":{"KNIT_...":"..."},"cost_profile":""|"bun"|"native","extra_cost_us":N,
   "conns":N,"rate_per_route":R}
A peer case: {"tag":"nginx","server_mode":"peer:nginx","command":"...","routes":["ping"]}.
"" leaves a setting unset (library default); hosts (KNIT_HOSTS) defaults to 1. Rate cases
without rate_per_route
offer rate-fraction x the inline saturating total of the same profile / 3 per route.
)";

const char* const kChooseOne =
    "choose one of --plan, --default, --full, --cost-sweep, --hosts-sweep, --hosts-sweep-small, "
    "--fleet";

[[noreturn]] void usage_error(const std::string& msg) {
  std::cerr << "knit-bench: " << msg << "\n\n" << kUsage;
  std::exit(2);
}

double seconds_arg(const std::string& flag, const std::string& v) {
  try {
    size_t pos = 0;
    double d = std::stod(v, &pos);
    if (pos != v.size() || !(d >= 0)) throw std::invalid_argument(v);
    return d;
  } catch (const std::exception&) {
    usage_error(flag + " needs a number of seconds >= 0, got \"" + v + "\"");
  }
}

int int_arg(const std::string& flag, const std::string& v, int lo, int hi) {
  try {
    size_t pos = 0;
    long n = std::stol(v, &pos);
    if (pos != v.size() || n < lo || n > hi) throw std::invalid_argument(v);
    return static_cast<int>(n);
  } catch (const std::exception&) {
    usage_error(flag + " needs an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                "], got \"" + v + "\"");
  }
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string x;
  while (std::getline(ss, x, ','))
    if (!x.empty()) v.push_back(x);
  return v;
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

int cmd_plan(const std::vector<std::string>& args) {
  std::string which;
  std::vector<std::string> profiles;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--default") which = "default";
    else if (args[i] == "--full") which = "full";
    else if (args[i] == "--cost-sweep") which = "cost-sweep";
    else if (args[i] == "--hosts-sweep") which = "hosts-sweep";
    else if (args[i] == "--hosts-sweep-small") which = "hosts-sweep-small";
    else if (args[i] == "--fleet") which = "fleet";
    else if (args[i] == "--profiles" && i + 1 < args.size()) profiles = split_list(args[++i]);
    else usage_error("plan: unknown argument " + args[i]);
  }
  if (which.empty())
    usage_error(
        "plan: choose --default, --full, --cost-sweep, --hosts-sweep, --hosts-sweep-small or "
        "--fleet");
  builtin_plan p = builtin(which, profiles);
  std::cout << to_json_pretty(plan_to_json(p.cases));
  std::cerr << "knit-bench: " << p.name << " plan, " << p.cases.size() << " cases x " << p.repeat
            << " repetition(s): about "
            << clock_text(estimate_s(static_cast<int>(p.cases.size()) * p.repeat, p.idle_s,
                                     p.warmup_s, p.window_s))
            << " (mm:ss) on the machine it was sized for, before reruns for foreign load\n";
  return 0;
}

int cmd_report(const std::vector<std::string>& args) {
  std::string rows;
  bool charts = true;
  for (const auto& a : args) {
    if (a == "--no-charts") charts = false;
    else if (!a.empty() && a[0] == '-') usage_error("report: unknown option " + a);
    else if (rows.empty()) rows = a;
    else usage_error("report: one rows.jsonl only");
  }
  if (rows.empty()) usage_error("report: give the path of rows.jsonl");
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

int cmd_run(const std::vector<std::string>& args, const std::vector<std::string>& full_argv) {
  run_options cfg;
  cfg.command_line = full_argv;
  std::string plan_file, builtin_name;
  std::vector<std::string> profiles;
  std::optional<double> idle, warmup, duration;
  std::optional<int> repeat, conns;
  std::vector<peer_spec> peers;
  std::string server = self_dir() + "/knit-server", load = self_dir() + "/knit-load";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) usage_error(a + " needs a value");
      return args[++i];
    };
    auto choose = [&](const std::string& name) {
      if (!builtin_name.empty() || !plan_file.empty()) usage_error(kChooseOne);
      builtin_name = name;
    };
    if (a == "--plan") {
      if (!builtin_name.empty() || !plan_file.empty()) usage_error(kChooseOne);
      plan_file = value();
    } else if (a == "--default") choose("default");
    else if (a == "--full") choose("full");
    else if (a == "--cost-sweep") choose("cost-sweep");
    else if (a == "--hosts-sweep") choose("hosts-sweep");
    else if (a == "--hosts-sweep-small") choose("hosts-sweep-small");
    else if (a == "--fleet") choose("fleet");
    else if (a == "--fleet-script") cfg.fleet_script = value();
    else if (a == "--out") cfg.out_dir = value();
    else if (a == "--repeat") repeat = int_arg(a, value(), 1, 1000);
    else if (a == "--idle") idle = seconds_arg(a, value());
    else if (a == "--warmup") warmup = seconds_arg(a, value());
    else if (a == "--duration") duration = seconds_arg(a, value());
    else if (a == "--conns") conns = int_arg(a, value(), 1, 100000);
    else if (a == "--rate-fraction") {
      cfg.rate_fraction = seconds_arg(a, value());
      if (cfg.rate_fraction <= 0 || cfg.rate_fraction > 10)
        usage_error("--rate-fraction must be in (0, 10]");
    } else if (a == "--profiles") profiles = split_list(value());
    else if (a == "--server") server = value();
    else if (a == "--load") load = value();
    else if (a == "--server-cpus" || a == "--gen-cpus") {
      try {
        (a == "--server-cpus" ? cfg.server_cpus : cfg.gen_cpus) = parse_cpu_list(value());
      } catch (const std::exception& e) {
        usage_error(e.what());
      }
    } else if (a == "--gen-threads") cfg.gen_threads = int_arg(a, value(), 1, 1024);
    else if (a == "--host") cfg.host = value();
    else if (a == "--port") cfg.port = int_arg(a, value(), 1, 65535);
    else if (a == "--append") cfg.append = true;
    else if (a == "--no-charts") cfg.charts = false;
    else if (a == "--lock") cfg.lock_path = value();
    else if (a == "--foreign-max") cfg.foreign_max = seconds_arg(a, value());
    else if (a == "--foreign-retries") cfg.foreign_retries = int_arg(a, value(), 0, 100);
    else if (a == "--peer" || a == "--peer-routes") {
      try {
        if (a == "--peer") peers.push_back(parse_peer_arg(value()));
        else apply_peer_routes(peers, value());
      } catch (const plan_error& e) {
        usage_error(e.what());
      }
    } else if (a == "--peer-timeout") {
      cfg.peer_ready_timeout_s = seconds_arg(a, value());
      if (cfg.peer_ready_timeout_s <= 0) usage_error("--peer-timeout must be > 0");
    } else usage_error("run: unknown argument " + a);
  }
  for (const auto& p : profiles)
    if (p != "bun" && p != "native")
      usage_error("--profiles: unknown cost profile \"" + p + "\" (bun, native)");
  if (builtin_name.empty() && plan_file.empty()) builtin_name = "default";

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
    add_peer_cases(cfg.cases, peers);
  } catch (const plan_error& e) {
    usage_error(e.what());
  }
  if (idle) cfg.idle_s = *idle;
  if (warmup) cfg.warmup_s = *warmup;
  if (duration) cfg.window_s = *duration;
  if (repeat) cfg.repeat = *repeat;
  if (conns) cfg.conns = *conns;
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
  std::vector<std::string> all(argv, argv + argc);
  if (argc < 2) usage_error("missing subcommand");
  std::string sub = all[1];
  std::vector<std::string> rest(all.begin() + 2, all.end());
  if (sub == "run") return cmd_run(rest, all);
  if (sub == "report") return cmd_report(rest);
  if (sub == "plan") return cmd_plan(rest);
  if (sub == "-h" || sub == "--help" || sub == "help") {
    std::cout << kUsage;
    return 0;
  }
  usage_error("unknown subcommand " + sub);
}

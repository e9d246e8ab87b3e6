// knit-bench's command line on CLI11: one option per flag, with the checks CLI11 has
// (ranges, numbers) and, after parsing, the ones it has not (plan choice, CPU lists, peers).
#include "driver/cli.hpp"

#include <sstream>

#include "common/cli_parse.hpp"
#include "driver/run/cpu_list.hpp"
#include "driver/run/plan.hpp"

namespace knit::bench {
namespace {

const char* const kChooseOne =
    "choose one of --plan, --default, --full, --cost-sweep, --hosts-sweep, --hosts-sweep-small, "
    "--fleet";

const char* const kPlanFormat = R"(
Plans are JSON arrays of cases (or objects with sizing and profiles, like bench/plans/full.json):
  {"tag":"t4","mode":"sat"|"rate","server_mode":"inline"|"pooled"|"asio"|"multi"|"auto","threads":4,
   "hosts":H,"spin":""|"0","park":""|"1","doorbell":""|"0"|"1","steal":""|"0"|"1",
   "env":{"KNIT_...":"..."},"cost_profile":""|"bun"|"native","extra_cost_us":N,
   "conns":N,"rate_per_route":R}
A peer case: {"tag":"nginx","server_mode":"peer:nginx","command":"...","routes":["ping"]}.
"" leaves a setting unset (library default); hosts (KNIT_HOSTS) defaults to 1. Rate cases
without rate_per_route offer rate-fraction x the inline saturating total of the same
profile / 3 per route. Flags take their value as --flag VALUE or --flag=VALUE.)";

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string x;
  while (std::getline(ss, x, ','))
    if (!x.empty()) v.push_back(x);
  return v;
}

// The built-in plan flags of run and plan: each adds its name to `chosen`.
void add_builtin_flags(CLI::App& sub, std::vector<std::string>& chosen) {
  const std::pair<const char*, const char*> plans[] = {
      {"default", "the default sweep (bench/plans/default.json)"},
      {"full", "the full sweep, every case of the reference benchmark"},
      {"cost-sweep", "route cost against the pool's threshold"},
      {"hosts-sweep", "hosts x workers (separate server and generator CPUs)"},
      {"hosts-sweep-small", "a shorter hosts sweep"},
      {"fleet", "fleet instances behind HAProxy"},
  };
  for (const auto& [name, what] : plans) {
    const std::string n = name;
    sub.add_flag_callback(
        "--" + n, [&chosen, n] { chosen.push_back(n); }, what);
  }
}

void add_run_options(CLI::App& run, bench_command& c, std::string& profiles,
                     std::vector<std::string>& peer_args, std::vector<std::string>& route_args,
                     std::string& server_cpus, std::string& gen_cpus) {
  run_options& o = c.run;
  run.add_option("--plan", c.plan_file, "a plan file (JSON)");
  run.add_option("--out", o.out_dir,
                 "output directory (rows.jsonl, meta.json, report.md, charts/, logs/); "
                 "default: bench-out/<plan>-<date>-<time>");
  run.add_option_function<int>(
         "--repeat", [&c](const int& v) { c.repeat = v; },
         "repetitions, interleaved (A B A B ...); report shows median and min-max")
      ->check(CLI::Range(1, 1000));
  run.add_option_function<double>(
         "--idle", [&c](const double& v) { c.idle_s = v; }, "idle window with no load (seconds)")
      ->check(CLI::NonNegativeNumber);
  run.add_option_function<double>(
         "--warmup", [&c](const double& v) { c.warmup_s = v; },
         "warm-up load before the window (seconds)")
      ->check(CLI::NonNegativeNumber);
  run.add_option_function<double>(
         "--duration", [&c](const double& v) { c.window_s = v; }, "measured window (seconds)")
      ->check(CLI::NonNegativeNumber);
  run.add_option_function<int>(
         "--conns", [&c](const int& v) { c.conns = v; },
         "connections per route (default: the plan's, 50; --full: 100)")
      ->check(CLI::Range(1, 100000));
  run.add_option("--rate-fraction", o.rate_fraction,
                 "rate cases offer F x the inline saturating total, F in (0, 10]")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10.0));
  run.add_option("--profiles", profiles,
                 "cost profiles for built-in plans and plan objects, e.g. bun,native");
  run.add_option("--server", c.server_exe, "knit-server binary (default: beside knit-bench)");
  run.add_option("--load", c.load_exe, "knit-load binary (default: beside knit-bench)");
  run.add_option("--server-cpus", server_cpus,
                 "pin the server, e.g. 0 or 0-1 (default: all but the generator's CPUs)");
  run.add_option("--gen-cpus", gen_cpus,
                 "pin knit-load, e.g. 1 (default: the last quarter of the CPUs, at least one; "
                 "the hosts sweeps: the last half). A plan with \"separate_cpus\" (the hosts "
                 "sweeps) refuses lists that overlap");
  run.add_option("--gen-threads", o.gen_threads,
                 "knit-load --threads (default: one per generator CPU)")
      ->check(CLI::Range(1, 1024));
  run.add_option("--host", o.host, "server address")->capture_default_str();
  run.add_option("--port", o.port, "server port")
      ->capture_default_str()
      ->check(CLI::Range(1, 65535));
  run.add_flag("--append", o.append, "add rows to an existing --out directory");
  run.add_flag_callback(
      "--no-charts", [&o] { o.charts = false; }, "skip the charts (matplotlib)");
  run.add_option("--lock", o.lock_path, "single-instance lock file")->capture_default_str();
  run.add_option("--foreign-max", o.foreign_max,
                 "a window in which the machine spent more than C cores outside the server, "
                 "knit-load and knit-bench (from /proc/stat) is measured again")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  run.add_option("--foreign-retries", o.foreign_retries,
                 "at most N times; the quietest attempt is kept, and flagged in its row and "
                 "the report if still over --foreign-max")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  run.add_option("--peer", peer_args,
                 "NAME=COMMAND: an external server measured like every case (repeatable): run "
                 "as /bin/sh -c COMMAND with PORT and HOST set and {port} / {host} replaced, "
                 "pinned like the server, in the foreground (it must not daemonize); one case "
                 "per load mode, tag NAME, server_mode peer:NAME")
      ->take_all()
      ->allow_extra_args(false);
  run.add_option("--peer-routes", route_args,
                 "NAME=LIST: the routes peer NAME serves, e.g. nginx=ping (default: all "
                 "three); it is loaded on those only")
      ->take_all()
      ->allow_extra_args(false);
  run.add_option("--peer-timeout", o.peer_ready_timeout_s,
                 "a peer must accept connections within S seconds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  run.add_option("--fleet-script", o.fleet_script,
                 "what runs a case with \"fleet\": N (N instances behind HAProxy; default "
                 "deploy/fleet.sh of the source tree knit-bench was built from)");
}

// The checks CLI11 cannot make: one plan, known profiles, CPU lists, peers.
void finish_run(bench_command& c, const std::vector<std::string>& chosen,
                const std::vector<std::string>& peer_args,
                const std::vector<std::string>& route_args, const std::string& server_cpus,
                const std::string& gen_cpus) {
  if (chosen.size() + (c.plan_file.empty() ? 0 : 1) > 1) throw cli_error(kChooseOne);
  if (!chosen.empty()) c.builtin_name = chosen.front();
  if (c.plan_file.empty() && c.builtin_name.empty()) c.builtin_name = "default";
  if (c.run.rate_fraction <= 0) throw cli_error("--rate-fraction must be in (0, 10]");
  try {
    if (!server_cpus.empty()) c.run.server_cpus = parse_cpu_list(server_cpus);
    if (!gen_cpus.empty()) c.run.gen_cpus = parse_cpu_list(gen_cpus);
  } catch (const std::exception& e) {
    throw cli_error(e.what());
  }
  try {
    for (const auto& a : peer_args) c.peers.push_back(parse_peer_arg(a));
    for (const auto& a : route_args) apply_peer_routes(c.peers, a);
  } catch (const plan_error& e) {
    throw cli_error(e.what());
  }
}

}  // namespace

bench_command parse_command_line(const std::vector<std::string>& argv) {
  bench_command c;
  c.run.command_line = argv;
  CLI::App app{
      "knit-bench: runs benchmark plans against knit-server with knit-load and "
      "renders their reports.",
      "knit-bench"};
  // A flag given twice keeps its last value, as the hand-written parser did.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.require_subcommand(1);
  app.footer(kPlanFormat);

  std::vector<std::string> run_chosen, plan_chosen, peer_args, route_args;
  std::string profiles, server_cpus, gen_cpus;
  CLI::App* run = app.add_subcommand("run", "run a plan: --plan FILE or a built-in one");
  add_builtin_flags(*run, run_chosen);
  add_run_options(*run, c, profiles, peer_args, route_args, server_cpus, gen_cpus);
  run->footer(kPlanFormat);

  CLI::App* report = app.add_subcommand("report", "re-render report.md from a rows.jsonl");
  report->add_option("rows", c.rows_path, "DIR/rows.jsonl")->required();
  report->add_flag_callback(
      "--no-charts", [&c] { c.charts = false; }, "skip the charts (matplotlib)");

  CLI::App* plan = app.add_subcommand("plan", "print a built-in plan as JSON");
  add_builtin_flags(*plan, plan_chosen);
  plan->add_option("--profiles", profiles, "cost profiles, e.g. bun,native");

  // `knit-bench help` as well as --help.
  std::vector<std::string> args(argv.size() > 1 ? argv.begin() + 1 : argv.end(), argv.end());
  if (!args.empty() && args.front() == "help") args.front() = "--help";
  bench_cli::parse_args(app, args);
  c.profiles = split_list(profiles);
  for (const auto& p : c.profiles)
    if (p != "bun" && p != "native")
      throw cli_error("--profiles: unknown cost profile \"" + p + "\" (bun, native)");
  if (*run) {
    c.what = bench_command::kind::run;
    finish_run(c, run_chosen, peer_args, route_args, server_cpus, gen_cpus);
  } else if (*report) {
    c.what = bench_command::kind::report;
  } else {
    c.what = bench_command::kind::plan;
    if (plan_chosen.size() != 1)
      throw cli_error(
          "plan: choose one of --default, --full, --cost-sweep, --hosts-sweep, "
          "--hosts-sweep-small or --fleet");
    c.builtin_name = plan_chosen.front();
  }
  return c;
}

}  // namespace knit::bench

// Runs a plan: for every case and repetition, start a server, measure idle CPU,
// warm up, measure a window, stop it; append one row per case and render the report.
#include "driver/runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "driver/identity.hpp"
#include "driver/interrupt.hpp"
#include "driver/json_write.hpp"
#include "driver/numfmt.hpp"
#include "driver/peer_process.hpp"
#include "driver/peers.hpp"
#include "driver/process_tree.hpp"
#include "driver/report.hpp"
#include "driver/server_process.hpp"
#include "driver/single_instance.hpp"
#include "driver/spawn.hpp"

namespace knit::bench {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

std::string wall_clock_text() {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S %z", std::localtime(&t));
  return buf;
}

// Sleeps in small steps so Ctrl-C ends an idle window promptly.
void sleep_for(double s) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
  while (std::chrono::steady_clock::now() < end) {
    if (interrupted()) throw CaseError("interrupted");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::string case_summary(const Case& c) {
  std::string s = c.tag + " " + c.mode + " " + c.server_mode;
  if (c.threads) s += " threads=" + std::to_string(c.threads);
  if (!c.spin.empty()) s += " spin=" + c.spin;
  if (!c.park.empty()) s += " park=" + c.park;
  if (!c.doorbell.empty()) s += " doorbell=" + c.doorbell;
  if (!c.steal.empty()) s += " steal=" + c.steal;
  for (const auto& [k, v] : c.env) s += " " + k + "=" + v;
  if (!c.cost_profile.empty()) s += " profile=" + c.cost_profile;
  if (c.extra_cost_us) s += " extra=" + std::to_string(*c.extra_cost_us) + "us";
  return s;
}

std::string file_stem(int index, const Case& c, int rep) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%03d", index);
  std::string s = std::string(buf) + "-" + c.tag + "-" + c.mode;
  if (!c.cost_profile.empty()) s += "-" + c.cost_profile;
  if (c.extra_cost_us) s += "-c" + std::to_string(*c.extra_cost_us);
  return s + "-r" + std::to_string(rep);
}

std::string result_line(const Row& r) {
  std::ostringstream s;
  s << "      total " << r.total_rps << " rps (";
  bool first = true;
  for (const char* n : {"ping", "ssr", "jwt"})
    if (auto it = r.routes.find(n); it != r.routes.end()) {
      s << (first ? "" : " / ") << n << " " << fixed(it->second.rps, 0);
      first = false;
    }
  s << "), /ping p99 " << (r.routes.count("ping") ? fixed(r.routes.at("ping").p99, 2) : "?") << " ms, server "
    << fixed(r.cores, 2) << " cores, idle " << fixed(r.idle_cores, 3) << " cores";
  if (r.cpu_us_per_req) s << ", " << *r.cpu_us_per_req << " CPU-us/req";
  for (const auto& [n, rs] : r.routes) {
    if (rs.rate_met && !*rs.rate_met) s << "  RATE NOT MET on /" << n;
    if (rs.ok < 1.0) s << "  /" << n << " success " << fixed(rs.ok * 100, 2) << "%";
  }
  return s.str();
}

json::object meta_run(const RunConfig& cfg, const MachineInfo& m) {
  json::object run;
  std::string cmd;
  json::array argv;
  for (const auto& a : cfg.command_line) {
    cmd += (cmd.empty() ? "" : " ") + a;
    argv.push_back(json::value(a));
  }
  run["command"] = cmd;
  run["argv"] = std::move(argv);
  run["cwd"] = fs::current_path().string();
  run["plan"] = cfg.plan_name;
  run["cases"] = cfg.cases.size();
  run["repeat"] = cfg.repeat;
  run["idle_s"] = cfg.idle_s;
  run["warmup_s"] = cfg.warmup_s;
  run["window_s"] = cfg.window_s;
  run["conns"] = cfg.conns;
  run["rate_fraction"] = cfg.rate_fraction;
  run["foreign_max"] = cfg.foreign_max;
  run["foreign_retries"] = cfg.foreign_retries;
  run["server"] = cfg.server_exe;
  run["load"] = cfg.load_exe;
  run["host"] = cfg.host;
  run["port"] = cfg.port;
  run["cpu_layout"] = json::object{{"server_cpus", format_cpu_list(cfg.server_cpus)},
                                   {"gen_cpus", format_cpu_list(cfg.gen_cpus)}};
  run["machine"] = json::object{{"model", m.model}, {"cpus", m.cpus}, {"kernel", m.kernel},
                                {"hostname", m.hostname}, {"date", m.date}};
  run["started"] = wall_clock_text();
  run["finished"] = nullptr;
  run["status"] = "running";
  run["plan_cases"] = plan_to_json(cfg.cases);
  run["peer_ready_timeout_s"] = cfg.peer_ready_timeout_s;
  return run;
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::trunc);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + p.string());
}

// /proc/stat now, or nothing where it cannot be read (the row then has no foreign_cores).
std::optional<MachineCpuSample> machine_sample() {
  try {
    return sample_machine_cpu();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// What measure() needs from the process under test. knit-server is one process that
// answers SIGUSR1 with its counters; an external peer is a process tree with no counters.
struct KnitTarget {
  using Sample = CpuSample;
  ServerProcess srv;
  explicit KnitTarget(ServerOptions o) : srv(std::move(o)) {}
  pid_t pid() const { return srv.pid(); }
  void check_alive(const char* phase) { srv.check_alive(phase); }
  Sample sample() { return sample_cpu(srv.pid()); }
  static CpuDelta delta(const Sample& a, const Sample& b) { return cpu_delta(a, b); }
  std::optional<ServerStats> stats() { return srv.request_stats(); }
  int threads() { return thread_count(srv.pid()); }
  int processes() { return 1; }
  std::string stop() { return srv.stop(); }
};

struct PeerTarget {
  using Sample = TreeCpuSample;
  PeerProcess peer;
  explicit PeerTarget(PeerOptions o) : peer(std::move(o)) {}
  pid_t pid() const { return peer.pid(); }
  void check_alive(const char* phase) { peer.check_alive(phase); }
  Sample sample() { return sample_tree_cpu(peer.pid()); }
  static CpuDelta delta(const Sample& a, const Sample& b) { return tree_cpu_delta(a, b); }
  // Never signalled: SIGUSR1 means something else to other servers (nginx reopens its logs).
  std::optional<ServerStats> stats() { return std::nullopt; }
  int threads() { return sample_tree_cpu(peer.pid()).threads(); }
  int processes() { return static_cast<int>(process_tree(peer.pid()).size()); }
  std::string stop() { return peer.stop(); }
};

// Everything that happens while the server is up: measure its idle CPU, warm up, run the
// measured window, read its counters, stop it.
template <class Target>
void measure_running(Target& srv, const Case& c, const RunConfig& cfg, const fs::path& logs, const std::string& stem,
                     const fs::path& bodies, CaseMeasurement& m) {
  m.server_pid = srv.pid();
  auto sample = [&](const char* phase) {
    srv.check_alive(phase);
    try {
      return srv.sample();
    } catch (const std::exception& e) {
      throw CaseError(std::string(phase) + ": " + e.what());
    }
  };

  try {
    // Idle: the server up, nothing offered. This column explained the seed's efficiency collapse.
    auto i0 = sample("idle");
    sleep_for(cfg.idle_s);
    auto i1 = sample("idle");
    m.idle = Target::delta(i0, i1);

    LoadSpec ls;
    ls.exe = cfg.load_exe;
    ls.host = cfg.host;
    ls.port = cfg.port;
    ls.threads = cfg.gen_threads > 0 ? cfg.gen_threads : static_cast<int>(cfg.gen_cpus.size());
    // A peer is loaded on the routes it serves only, each with the same per-route load.
    for (auto& r : standard_routes(m.conns, c.mode == "rate" ? m.rate_per_route : 0.0, bodies.string())) {
      auto served = case_routes(c);
      if (std::find(served.begin(), served.end(), r.name) != served.end()) ls.routes.push_back(r);
    }
    if (cfg.warmup_s > 0) {
      ls.duration_s = cfg.warmup_s;
      ls.json_path = (logs / (stem + ".warmup.json")).string();
      run_load(ls, cfg.gen_cpus, (logs / (stem + ".warmup.log")).string());
    }
    srv.check_alive("warm-up");

    ls.duration_s = cfg.window_s;
    ls.json_path = (logs / (stem + ".load.json")).string();
    m.load_cmd = load_argv(ls);
    m.stats_before = srv.stats();
    // The machine's busy CPU brackets the server's samples; the driver's own CPU and the
    // generator's (reaped inside run_load) bracket both.
    const double own0 = own_and_reaped_children_cpu_s();
    std::optional<MachineCpuSample> mc0 = machine_sample();
    auto w0 = sample("window");
    m.load = run_load(ls, cfg.gen_cpus, (logs / (stem + ".load.log")).string());
    auto w1 = sample("window");
    std::optional<MachineCpuSample> mc1 = machine_sample();
    const double own1 = own_and_reaped_children_cpu_s();
    m.window = Target::delta(w0, w1);
    if (mc0 && mc1 && mc1->wall_s > mc0->wall_s) {
      // Ticks on both sides: /proc/stat counts in ticks, so the server's ticks cancel it exactly.
      m.foreign_cores = foreign_cores(*mc0, *mc1, m.window.ticks_s, own1 - own0);
      m.steal_cores = (mc1->steal_s - mc0->steal_s) / (mc1->wall_s - mc0->wall_s);
    }
    m.stats_after = srv.stats();
    if (!is_peer_case(c) && (!m.stats_before || !m.stats_after))
      m.notes.push_back("no knit-stats line after SIGUSR1; the row has no pool counters");
    if (m.stats_after && !m.stats_after->mode.empty() && m.stats_after->mode != c.server_mode)
      m.notes.push_back("knit-stats reports mode \"" + m.stats_after->mode + "\", the case asked for \"" +
                        c.server_mode + "\": the row is kept (reported_mode) and the report warns");
    m.os_threads = srv.threads();
    m.processes = srv.processes();
  } catch (const FatalError&) {
    throw;
  } catch (const std::exception& e) {
    // Stop here rather than in the destructor, where a port that stays busy could
    // only be swallowed: that must end the run (FatalError), not just this case.
    std::string what = e.what();
    srv.stop();
    throw CaseError(what);
  }
  if (std::string note = srv.stop(); !note.empty()) m.notes.push_back(note);
}

// One case, start to stop: knit-server (port check, exec, identity, readiness, socket
// ownership) or an external peer (its command, readiness, its tree's socket ownership).
CaseMeasurement measure(const Case& c, const RunConfig& cfg, const fs::path& logs, const std::string& stem,
                        const fs::path& bodies, double rate_per_route) {
  CaseMeasurement m;
  m.window_s = cfg.window_s;
  m.conns = c.conns > 0 ? c.conns : cfg.conns;
  m.rate_per_route = rate_per_route;
  m.server_env = server_env(c, cfg.host, cfg.port);
  const std::string log_path = (logs / (stem + ".server.log")).string();

  if (is_peer_case(c)) {
    PeerOptions po;
    po.name = c.tag;
    po.command = peer_command_text(c.peer_command, cfg.host, cfg.port);
    po.env = m.server_env;
    po.host = cfg.host;
    po.port = cfg.port;
    po.cpus = cfg.server_cpus;
    po.log_path = log_path;
    po.ready_timeout_s = cfg.peer_ready_timeout_s;
    po.stop_grace_s = cfg.stop_grace_s;
    m.peer_command = po.command;
    PeerTarget t(std::move(po));
    measure_running(t, c, cfg, logs, stem, bodies, m);
    return m;
  }
  ServerOptions so;
  so.exe = cfg.server_exe;
  so.args = cfg.server_args;
  so.env = m.server_env;
  so.host = cfg.host;
  so.port = cfg.port;
  so.cpus = cfg.server_cpus;
  so.log_path = log_path;
  so.ready_timeout_s = cfg.ready_timeout_s;
  so.stop_grace_s = cfg.stop_grace_s;
  KnitTarget t(std::move(so));
  measure_running(t, c, cfg, logs, stem, bodies, m);
  return m;
}

// measure(), again while the machine was busy elsewhere (foreign_verdict): the attempt
// with the least foreign load is kept, with the number of reruns it took.
CaseMeasurement measure_quietest(const Case& c, const RunConfig& cfg, const fs::path& logs, const std::string& stem,
                                 const fs::path& bodies, double rate_per_route) {
  std::optional<CaseMeasurement> quietest;
  for (int reruns = 0;; ++reruns) {
    std::optional<CaseMeasurement> attempt;
    try {
      attempt = measure(c, cfg, logs, reruns ? stem + "-f" + std::to_string(reruns) : stem, bodies, rate_per_route);
    } catch (const FatalError&) {
      throw;
    } catch (const std::exception& e) {
      if (!quietest) throw;
      // A rerun that failed leaves the busy attempt already measured: keep that one.
      quietest->notes.push_back(std::string("rerun for foreign load failed: ") + e.what());
      break;
    }
    CaseMeasurement& m = *attempt;
    const ForeignVerdict v = foreign_verdict(m.foreign_cores, reruns, cfg.foreign_max, cfg.foreign_retries);
    const double foreign = m.foreign_cores.value_or(0);
    if (!quietest || foreign < quietest->foreign_cores.value_or(0)) quietest = std::move(m);
    quietest->foreign_reruns = reruns;
    if (v != ForeignVerdict::rerun) break;
    std::cerr << "      foreign load " << fixed(foreign, 2) << " cores (> " << fixed(cfg.foreign_max, 2)
              << "): measuring again (" << reruns + 1 << "/" << cfg.foreign_retries << ")\n";
  }
  if (quietest->foreign_cores && *quietest->foreign_cores > cfg.foreign_max)
    quietest->notes.push_back("foreign load " + fixed(*quietest->foreign_cores, 2) + " cores after " +
                              std::to_string(quietest->foreign_reruns) + " rerun(s): row flagged");
  return std::move(*quietest);
}

}  // namespace

ForeignVerdict foreign_verdict(std::optional<double> foreign_cores, int reruns_done, double max_cores, int max_reruns) {
  if (!foreign_cores || *foreign_cores <= max_cores) return ForeignVerdict::keep;
  return reruns_done < max_reruns ? ForeignVerdict::rerun : ForeignVerdict::flag;
}

std::string clock_text(double seconds) {
  long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02ld:%02ld", s / 60, s % 60);
  return buf;
}

Row build_row(const Case& c, int rep, const CaseMeasurement& m, const RunConfig& cfg) {
  Row r;
  r.tag = c.tag;
  r.mode = c.mode;
  r.threads = c.threads;
  r.spin = c.spin;
  r.park = c.park;
  if (!c.doorbell.empty()) r.doorbell = c.doorbell == "1";
  if (!c.steal.empty()) r.steal = c.steal == "1";
  r.server_mode = c.server_mode;
  r.cost_profile = c.cost_profile;
  r.extra_cost_us = c.extra_cost_us;
  r.env = c.env;
  r.rep = rep;

  const double idle_wall = m.idle.wall_s > 0 ? m.idle.wall_s : cfg.idle_s;
  r.idle_cores = idle_wall > 0 ? py_round(m.idle.best_s() / idle_wall, 3) : 0;
  // Like drive.py: CPU over the window divided by the nominal window length, and the
  // derived ratios from the unrounded values.
  const double cores = m.window_s > 0 ? m.window.best_s() / m.window_s : 0;
  double total = 0;
  const bool peer = is_peer_case(c);
  for (const auto& [name, lr] : m.load.routes) {
    RouteStats rs;
    // Only successful answers are throughput: a 503 from admission control (a starved pool
    // refuses almost every heavy request in microseconds) or a peer's 404 for a route it
    // lacks would otherwise count as served requests. The success rate is kept beside it.
    const double rps = lr.rps * lr.success_rate;
    rs.rps = py_round(rps, 2);
    rs.p50 = py_round(lr.p50 * 1000, 2);
    rs.p90 = py_round(lr.p90 * 1000, 2);
    rs.p99 = py_round(lr.p99 * 1000, 2);
    rs.p999 = py_round(lr.p999 * 1000, 2);
    rs.max = py_round(lr.max * 1000, 2);
    rs.ok = py_round(lr.success_rate, 2);
    if (c.mode == "rate") {
      rs.rate_target = py_round(lr.rate_target.value_or(m.rate_per_route), 2);
      if (lr.rate_met) rs.rate_met = lr.rate_met;
    }
    r.routes[name] = rs;
    total += rps;
  }
  r.total_rps = py_round_int(total);
  r.cores = py_round(cores, 2);
  if (cores > 0) r.rps_per_core = py_round_int(total / cores);
  if (total > 0) r.cpu_us_per_req = py_round_int(cores * 1e6 / total);
  r.os_threads = m.os_threads;
  double gen = 0;
  if (m.load.gen_cores) gen = *m.load.gen_cores;
  else if (m.load.gen_cpu_s && m.window_s > 0) gen = *m.load.gen_cpu_s / m.window_s;
  r.gen_cores = py_round(gen, 2);

  r.idle_s = cfg.idle_s;
  r.warmup_s = cfg.warmup_s;
  r.window_s = m.window_s;
  r.conns = m.conns;
  if (c.mode == "rate") r.rate_per_route = py_round(m.rate_per_route, 2);
  if (m.stats_before && m.stats_after) {
    if (m.stats_before->has_pool && m.stats_after->has_pool) {
      r.pool_counters = diff_counters(m.stats_before->pool_totals, m.stats_after->pool_totals);
      r.pool_per_call = per_call(r.pool_counters);
    }
    r.server_requests = diff_counters(m.stats_before->requests, m.stats_after->requests);
  }
  r.cpu_layout = json::object{{"server_cpus", format_cpu_list(cfg.server_cpus)},
                              {"gen_cpus", format_cpu_list(cfg.gen_cpus)}};
  auto six = [](double x) { return py_round(x, 6); };
  json::object cpu;
  cpu["source"] = m.window.source();
  cpu["idle_ticks_s"] = six(m.idle.ticks_s);
  cpu["idle_sched_s"] = m.idle.sched_s ? json::value(six(*m.idle.sched_s)) : json::value(nullptr);
  cpu["idle_wall_s"] = six(m.idle.wall_s);
  cpu["window_ticks_s"] = six(m.window.ticks_s);
  cpu["window_sched_s"] = m.window.sched_s ? json::value(six(*m.window.sched_s)) : json::value(nullptr);
  cpu["window_wall_s"] = six(m.window.wall_s);
  cpu["cores_ticks"] = m.window_s > 0 ? py_round(m.window.ticks_s / m.window_s, 2) : 0.0;
  cpu["idle_cores_ticks"] = idle_wall > 0 ? py_round(m.idle.ticks_s / idle_wall, 3) : 0.0;
  if (m.load.gen_cpu_s) cpu["gen_cpu_s"] = six(*m.load.gen_cpu_s);
  if (m.steal_cores) cpu["steal_cores"] = py_round(*m.steal_cores, 3);
  r.cpu = std::move(cpu);
  if (m.foreign_cores) {
    r.foreign_cores = py_round(*m.foreign_cores, 3);
    r.foreign_flagged = *m.foreign_cores > cfg.foreign_max;
    r.foreign_reruns = m.foreign_reruns;
  }
  r.server_env = m.server_env;
  r.load_cmd = m.load_cmd;
  r.server_pid = m.server_pid;
  if (m.stats_after && !m.stats_after->mode.empty()) r.reported_mode = m.stats_after->mode;
  if (peer) {
    r.peer_command = m.peer_command;
    r.peer_processes = m.processes;
  }
  return r;
}

int run_benchmark(const RunConfig& cfg) {
  auto fail = [](int code, const std::string& msg) {
    std::cerr << "knit-bench: " << msg << "\n";
    return code;
  };
  if (find_in_path(cfg.server_exe).empty())
    return fail(2, "server binary not found or not executable: " + cfg.server_exe + " (use --server PATH)");
  if (find_in_path(cfg.load_exe).empty())
    return fail(2, "load generator not found or not executable: " + cfg.load_exe + " (use --load PATH)");
  if (cfg.cases.empty()) return fail(2, "the plan has no cases");

  std::unique_ptr<InstanceLock> lock;
  try {
    lock = std::make_unique<InstanceLock>(cfg.lock_path);
  } catch (const std::exception& e) {
    return fail(3, e.what());
  }
  // A server or load generator still running from an earlier (crashed) run would
  // share the CPUs and skew every number; report it rather than kill anything.
  auto strays = processes_running({cfg.server_exe, cfg.load_exe}, ::getpid());
  if (!strays.empty()) {
    std::string pids;
    for (pid_t p : strays) pids += " " + std::to_string(p);
    return fail(3, "already running from " + cfg.server_exe + " or " + cfg.load_exe + ": PID" + pids +
                       ". Stop them yourself (by PID) and retry; knit-bench never kills by name.");
  }

  fs::path out = fs::absolute(cfg.out_dir);
  fs::path logs = out / "logs", bodies = out / "bodies";
  fs::path rows_path = out / "rows.jsonl", meta_path = out / "meta.json";
  if (out.string().find(':') != std::string::npos)
    return fail(2, "--out must not contain ':' (knit-load route specs use it as a separator)");
  std::error_code ec;
  fs::create_directories(logs, ec);
  fs::create_directories(bodies, ec);
  if (ec) return fail(2, "cannot create " + out.string() + ": " + ec.message());
  if (fs::exists(rows_path) && !cfg.append)
    return fail(2, rows_path.string() + " already exists; choose another --out or pass --append");
  write_bodies(bodies.string());

  json::object meta;
  if (cfg.append && fs::exists(meta_path)) {
    std::ifstream in(meta_path);
    std::stringstream ss;
    ss << in.rdbuf();
    try {
      auto v = parse_json(ss.str(), meta_path.string());
      if (v.is_object()) meta = v.get_object();
    } catch (const std::exception& e) {
      std::cerr << "knit-bench: warning: " << e.what() << "; starting a new meta.json\n";
    }
  }
  if (!meta.contains("runs") || !meta["runs"].is_array()) meta["runs"] = json::array();
  MachineInfo machine = machine_info();
  meta["runs"].get_array().push_back(meta_run(cfg, machine));
  auto& run_meta = meta["runs"].get_array().back().get_object();
  write_file(meta_path, to_json_pretty(meta));

  install_interrupt_handlers();
  const int total_cases = static_cast<int>(cfg.cases.size()) * cfg.repeat;
  std::cerr << "knit-bench: " << cfg.plan_name << " plan, " << cfg.cases.size() << " cases x " << cfg.repeat
            << " repetition(s); idle " << seconds_text(cfg.idle_s) << " s, warm-up " << seconds_text(cfg.warmup_s)
            << " s, window " << seconds_text(cfg.window_s) << " s; about "
            << clock_text(estimate_s(total_cases, cfg.idle_s, cfg.warmup_s, cfg.window_s))
            << " (mm:ss) before reruns for foreign load; out " << out.string() << "\n";

  // Inline saturating totals, per cost profile and extra cost, from the first
  // repetition: rate cases in every repetition offer the same load.
  std::map<std::string, double> inline_total;
  int k = 0, failed = 0, measured = 0;
  double spent = 0;
  std::string status = "complete";
  const double estimate = estimate_s(1, cfg.idle_s, cfg.warmup_s, cfg.window_s);
  for (int rep = 0; rep < cfg.repeat && status == "complete"; ++rep) {
    for (const Case& c : cfg.cases) {
      if (interrupted()) {
        status = "interrupted";
        break;
      }
      ++k;
      double per_case = k > 1 ? spent / (k - 1) : estimate;
      std::cerr << "[" << k << "/" << total_cases << "] " << case_summary(c) << " rep " << rep + 1 << "/"
                << cfg.repeat << "  ETA " << clock_text(per_case * (total_cases - k + 1)) << "\n";
      auto t0 = std::chrono::steady_clock::now();
      try {
        double rate = 0;
        if (c.mode == "rate") {
          if (c.rate_per_route > 0) {
            rate = c.rate_per_route;
          } else {
            auto it = inline_total.find(reference_key(c));
            if (it == inline_total.end())
              throw CaseError("no inline saturating measurement to derive the rate from (did it fail?)");
            rate = std::max(1.0, std::round(cfg.rate_fraction * it->second / 3.0));
          }
        }
        CaseMeasurement m = measure_quietest(c, cfg, logs, file_stem(k, c, rep), bodies, rate);
        Row row = build_row(c, rep, m, cfg);
        for (const auto& need : case_routes(c))
          if (!row.routes.count(need)) throw CaseError("knit-load JSON has no route " + need);
        append_row_file(rows_path.string(), row);
        ++measured;
        if (c.server_mode == "inline" && c.mode == "sat" && !inline_total.count(reference_key(c)))
          inline_total[reference_key(c)] = static_cast<double>(row.total_rps);
        std::cerr << result_line(row) << "\n";
        for (const auto& note : m.notes) std::cerr << "      note: " << note << "\n";
      } catch (const FatalError& e) {
        std::cerr << "      FATAL: " << e.what() << "\n";
        status = std::string("aborted: ") + e.what();
        ++failed;
        break;
      } catch (const std::exception& e) {
        std::cerr << "      FAILED: " << e.what() << "\n";
        ++failed;
      }
      spent += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  if (interrupted() && status == "complete") status = "interrupted";
  if (status == "complete" && failed) status = "complete, " + std::to_string(failed) + " case(s) failed";
  run_meta["finished"] = wall_clock_text();
  run_meta["status"] = status;
  run_meta["rows_written"] = measured;
  write_file(meta_path, to_json_pretty(meta));

  if (fs::exists(rows_path)) {
    try {
      std::vector<std::string> warnings;
      std::string report = write_report(rows_path.string(), cfg.charts, &warnings);
      for (const auto& w : warnings) std::cerr << "knit-bench: warning: " << w << "\n";
      std::cerr << "knit-bench: " << measured << " row(s) -> " << rows_path.string() << "; report " << report << "\n";
    } catch (const std::exception& e) {
      std::cerr << "knit-bench: report failed: " << e.what() << "\n";
      return 1;
    }
  }
  if (status.rfind("aborted", 0) == 0 || status == "interrupted") return 1;
  return failed ? 1 : 0;
}

}  // namespace knit::bench

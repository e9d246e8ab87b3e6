// Measures one case: starts knit-server or an external peer, samples its idle CPU, warms
// it up, measures a window under load, reads its counters and stops it; again when the
// machine was busy elsewhere.
#include "driver/run/case_measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <thread>

#include "driver/run/numfmt.hpp"
#include "driver/run/peers.hpp"
#include "driver/run/wrk_run.hpp"
#include "driver/system/case_process.hpp"
#include "driver/system/interrupt.hpp"
#include "driver/system/process_tree.hpp"
#include "driver/system/syscall_counter.hpp"

namespace knit::bench {
namespace {

namespace fs = std::filesystem;

// Sleeps in small steps so Ctrl-C ends an idle window promptly.
void sleep_for(double s) {
  auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
  while (std::chrono::steady_clock::now() < end) {
    if (interrupted()) throw case_error("interrupted");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// /proc/stat now, or nothing where it cannot be read (the row then has no foreign_cores).
std::optional<machine_cpu_sample> machine_sample() {
  try {
    return sample_machine_cpu();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// How a server's CPU is counted: knit-server with thread workers is one process; an external
// peer is a process tree (nginx: master and workers), and so is knit-server with
// KNIT_ISOLATION=process (the server and its knit-proc-N children), summed over its
// members. Counting only the server's own ticks would leave the workers' CPU out of its
// CPU per request and put it in the foreign load instead.
struct one_process_cpu {
  using sample = cpu_sample;
  static sample take(pid_t pid) { return sample_cpu(pid); }
  static cpu_usage delta(const sample& a, const sample& b) { return cpu_delta(a, b); }
  static int threads(pid_t pid) { return thread_count(pid); }
  static int processes(pid_t) { return 1; }
};

struct process_tree_cpu {
  using sample = tree_cpu_sample;
  static sample take(pid_t pid) { return sample_tree_cpu(pid); }
  static cpu_usage delta(const sample& a, const sample& b) { return tree_cpu_delta(a, b); }
  static int threads(pid_t pid) { return sample_tree_cpu(pid).threads(); }
  static int processes(pid_t pid) { return static_cast<int>(process_tree(pid).size()); }
};

// True when the case runs knit-server with worker processes (KNIT_ISOLATION=process).
bool has_worker_processes(const plan_case& c) {
  const auto it = c.env.find("KNIT_ISOLATION");
  return it != c.env.end() && it->second == "process";
}

// Everything that happens while the server is up: measure its idle CPU, warm up, run the
// measured window, read its counters, stop it.
template <class Cpu>
void measure_running(case_process& srv, const plan_case& c, const run_options& cfg,
                     const fs::path& logs, const std::string& stem, const fs::path& bodies,
                     case_measurement& m) {
  m.server_pid = srv.pid();
  auto sample = [&](const char* phase) {
    srv.check_alive(phase);
    try {
      return Cpu::take(srv.pid());
    } catch (const std::exception& e) {
      throw case_error(std::string(phase) + ": " + e.what());
    }
  };

  try {
    // Idle: the server up, nothing offered. This column explained the reference
    // benchmark's efficiency collapse.
    auto i0 = sample("idle");
    sleep_for(cfg.idle_s);
    auto i1 = sample("idle");
    m.idle = Cpu::delta(i0, i1);

    load_spec ls;
    ls.exe = cfg.load_exe;
    ls.host = cfg.host;
    ls.port = cfg.port;
    ls.threads = cfg.gen_threads > 0 ? cfg.gen_threads : static_cast<int>(cfg.gen_cpus.size());
    // A peer is loaded on the routes it serves only, each with the same per-route load.
    for (auto& r :
         standard_routes(m.conns, c.mode == "rate" ? m.rate_per_route : 0.0, bodies.string())) {
      auto served = case_routes(c);
      if (std::find(served.begin(), served.end(), r.name) != served.end()) ls.routes.push_back(r);
    }
    // A pipelined case: wrk instead, the same connections and generator threads.
    const bool pipelined = c.mode == "pipelined";
    wrk_spec ws;
    if (pipelined) {
      ws.exe = find_wrk();
      if (ws.exe.empty())
        throw case_error("a pipelined case needs wrk, and there is none on PATH (./knit deps)");
      ws.host = cfg.host;
      ws.port = cfg.port;
      ws.threads = std::max(1, ls.threads);
      ws.conns = m.conns;
      ws.script_path = write_wrk_script(bodies.string());
    }
    // One run of the load: logs/STEM.PART.log (and knit-load's .json).
    auto run = [&](double seconds, const std::string& part) {
      const std::string base = (logs / (stem + "." + part)).string();
      if (pipelined) {
        ws.duration_s = seconds;
        return run_wrk(ws, cfg.gen_cpus, base + ".log");
      }
      ls.duration_s = seconds;
      ls.json_path = base + ".json";
      return run_load(ls, cfg.gen_cpus, base + ".log");
    };
    if (cfg.warmup_s > 0) run(cfg.warmup_s, "warmup");
    srv.check_alive("warm-up");

    ls.duration_s = ws.duration_s = cfg.window_s;
    ls.json_path = (logs / (stem + ".load.json")).string();
    m.load_cmd = pipelined ? wrk_argv(ws) : load_argv(ls);
    m.stats_before = srv.request_stats();
    // The machine's busy CPU brackets the server's samples; the driver's own CPU and the
    // generator's (reaped inside run_load) bracket both.
    const double own0 = own_and_reaped_children_cpu_s();
    std::optional<machine_cpu_sample> mc0 = machine_sample();
    syscall_counter calls(srv.pid(), (logs / (stem + ".syscalls.csv")).string());
    auto w0 = sample("window");
    m.load = run(cfg.window_s, "load");
    auto w1 = sample("window");
    m.syscalls = calls.finish();
    std::optional<machine_cpu_sample> mc1 = machine_sample();
    const double own1 = own_and_reaped_children_cpu_s();
    m.window = Cpu::delta(w0, w1);
    if (mc0 && mc1 && mc1->wall_s > mc0->wall_s) {
      // Ticks on both sides: /proc/stat counts in ticks, so the server's ticks cancel it exactly.
      m.foreign_cores = foreign_cores(*mc0, *mc1, m.window.ticks_s, own1 - own0);
      m.steal_cores = (mc1->steal_s - mc0->steal_s) / (mc1->wall_s - mc0->wall_s);
    }
    m.stats_after = srv.request_stats();
    if (!is_peer_case(c) && c.fleet == 0 && (!m.stats_before || !m.stats_after))
      m.notes.push_back("no knit-stats line after SIGUSR1; the row has no pool counters");
    if (m.stats_after && !m.stats_after->mode.empty() && m.stats_after->mode != c.server_mode)
      m.notes.push_back("knit-stats reports mode \"" + m.stats_after->mode +
                        "\", the case asked for \"" + c.server_mode +
                        "\": the row is kept (reported_mode) and the report warns");
    // A server from before KNIT_HOSTS ignores it and runs one loop: say so, as for the mode.
    if (m.stats_after && c.hosts != m.stats_after->hosts.value_or(1))
      m.notes.push_back("knit-stats lists " + std::to_string(m.stats_after->hosts.value_or(1)) +
                        " host(s), the case asked for " + std::to_string(c.hosts) +
                        ": the row is kept (reported_hosts) and the report warns");
    m.os_threads = Cpu::threads(srv.pid());
    m.processes = Cpu::processes(srv.pid());
  } catch (const fatal_error&) {
    throw;
  } catch (const std::exception& e) {
    // Stop here rather than in the destructor, where a port that stays busy could
    // only be swallowed: that must end the run (fatal_error), not just this case.
    std::string what = e.what();
    srv.stop();
    throw case_error(what);
  }
  if (std::string note = srv.stop(); !note.empty()) m.notes.push_back(note);
}

// The command that runs a fleet of `instances` in the foreground until SIGTERM.
std::string fleet_command(const run_options& cfg, int instances) {
  std::string script = cfg.fleet_script.empty() ? std::string(KNIT_FLEET_SCRIPT) : cfg.fleet_script;
  std::string quoted = "'";
  for (char ch : script) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return "exec " + quoted + "' run " + std::to_string(instances);
}

// One case, start to stop: knit-server (port check, exec, identity, readiness, socket
// ownership) or an external peer (its command, readiness, its tree's socket ownership).
case_measurement measure(const plan_case& c, const run_options& cfg, const fs::path& logs,
                         const std::string& stem, const fs::path& bodies, double rate_per_route) {
  case_measurement m;
  // wrk runs whole seconds: a pipelined case's CPU is divided by the window wrk ran.
  m.window_s = c.mode == "pipelined" ? std::ceil(cfg.window_s) : cfg.window_s;
  m.conns = c.conns > 0 ? c.conns : cfg.conns;
  m.rate_per_route = rate_per_route;
  m.server_env = server_env(c, cfg.host, cfg.port);
  const std::string log_path = (logs / (stem + ".server.log")).string();

  process_options po;
  po.env = m.server_env;
  po.host = cfg.host;
  po.port = cfg.port;
  po.cpus = cfg.server_cpus;
  po.log_path = log_path;
  po.stop_grace_s = cfg.stop_grace_s;
  if (is_peer_case(c)) {
    po.kind = server_kind::peer;
    po.name = c.tag;
    po.command = peer_command_text(c.peer_command, cfg.host, cfg.port);
    po.ready_timeout_s = cfg.peer_ready_timeout_s;
    m.peer_command = po.command;
    case_process srv(std::move(po));
    measure_running<process_tree_cpu>(srv, c, cfg, logs, stem, bodies, m);
    return m;
  }
  if (c.fleet > 0) {
    // N instances behind HAProxy: deploy/fleet.sh in the foreground, measured as a process
    // tree (the script, HAProxy, each instance and its supervisor shell), loaded through
    // HAProxy's front port. The instances get the case's environment as it is.
    po.kind = server_kind::peer;
    po.name = c.tag + " (fleet of " + std::to_string(c.fleet) + ")";
    po.command = fleet_command(cfg, c.fleet);
    po.env["KNIT_FLEET_SERVER"] = cfg.server_exe;
    po.env["KNIT_FLEET_FRONT_PORT"] = std::to_string(cfg.port);
    po.env["KNIT_FLEET_BASE_PORT"] = std::to_string(cfg.port + 1);
    po.env["KNIT_FLEET_DIR"] = (logs / (stem + ".fleet")).string();
    // Checks every 500 ms (drain 1.5 s): the instances drain one after the other when
    // fleet.sh gets the driver's SIGTERM, inside the stop grace period below.
    po.env["KNIT_FLEET_CHECK_INTER_MS"] = "500";
    po.ready_timeout_s = cfg.ready_timeout_s;
    // fleet.sh stops HAProxy, then each instance with one SIGTERM (its drain, 1.5 s here).
    po.root_stops_tree = true;
    po.stop_grace_s = std::max(po.stop_grace_s, 15.0);
    m.peer_command = po.command;
    case_process srv(std::move(po));
    measure_running<process_tree_cpu>(srv, c, cfg, logs, stem, bodies, m);
    return m;
  }
  po.exe = cfg.server_exe;
  po.args = cfg.server_args;
  po.ready_timeout_s = cfg.ready_timeout_s;
  case_process srv(std::move(po));
  if (has_worker_processes(c)) {
    measure_running<process_tree_cpu>(srv, c, cfg, logs, stem, bodies, m);
  } else {
    measure_running<one_process_cpu>(srv, c, cfg, logs, stem, bodies, m);
  }
  return m;
}

}  // namespace

// measure(), again while the machine was busy elsewhere (foreign_verdict): the attempt
// with the least foreign load is kept, with the number of reruns it took.
case_measurement measure_quietest(const plan_case& c, const run_options& cfg, const fs::path& logs,
                                  const std::string& stem, const fs::path& bodies,
                                  double rate_per_route) {
  std::optional<case_measurement> quietest;
  for (int reruns = 0;; ++reruns) {
    std::optional<case_measurement> attempt;
    try {
      attempt = measure(c, cfg, logs, reruns ? stem + "-f" + std::to_string(reruns) : stem, bodies,
                        rate_per_route);
    } catch (const fatal_error&) {
      throw;
    } catch (const std::exception& e) {
      if (!quietest) throw;
      // A rerun that failed leaves the busy attempt already measured: keep that one.
      quietest->notes.push_back(std::string("rerun for foreign load failed: ") + e.what());
      break;
    }
    case_measurement& m = *attempt;
    const foreign_load_verdict v =
        foreign_verdict(m.foreign_cores, reruns, cfg.foreign_max, cfg.foreign_retries);
    const double foreign = m.foreign_cores.value_or(0);
    if (!quietest || foreign < quietest->foreign_cores.value_or(0)) quietest = std::move(m);
    quietest->foreign_reruns = reruns;
    if (v != foreign_load_verdict::rerun) break;
    std::cerr << "      foreign load " << fixed(foreign, 2) << " cores (> "
              << fixed(cfg.foreign_max, 2) << "): measuring again (" << reruns + 1 << "/"
              << cfg.foreign_retries << ")\n";
  }
  if (quietest->foreign_cores && *quietest->foreign_cores > cfg.foreign_max)
    quietest->notes.push_back("foreign load " + fixed(*quietest->foreign_cores, 2) +
                              " cores after " + std::to_string(quietest->foreign_reruns) +
                              " rerun(s): row flagged");
  return std::move(*quietest);
}

foreign_load_verdict foreign_verdict(std::optional<double> foreign_cores, int reruns_done,
                                     double max_cores, int max_reruns) {
  if (!foreign_cores || *foreign_cores <= max_cores) return foreign_load_verdict::keep;
  return reruns_done < max_reruns ? foreign_load_verdict::rerun : foreign_load_verdict::flag;
}

}  // namespace knit::bench

// Builds the row of rows.jsonl for one measured case, rounded as the reference
// benchmark's rows were.
#include "driver/run/case_row.hpp"

#include "driver/run/cpu_list.hpp"
#include "driver/run/numfmt.hpp"
#include "driver/run/plan.hpp"
#include "driver/system/cpu_sampler.hpp"
#include "driver/system/spawn.hpp"

namespace knit::bench {

namespace json = boost::json;

result_row build_row(const plan_case& c, int rep, const case_measurement& m,
                     const run_options& cfg) {
  result_row r;
  r.tag = c.tag;
  r.mode = c.mode;
  r.threads = c.threads;
  r.spin = c.spin;
  r.park = c.park;
  if (!c.doorbell.empty()) r.doorbell = c.doorbell == "1";
  if (!c.steal.empty()) r.steal = c.steal == "1";
  r.server_mode = c.server_mode;
  r.hosts = c.hosts;
  r.fleet = c.fleet;
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
  double answered = 0;  // every response, refusals too: each cost the server its system calls
  const bool peer = is_peer_case(c);
  for (const auto& [name, lr] : m.load.routes) {
    route_row_stats rs;
    // Only successful answers are throughput: a 503 from admission control (a starved pool
    // refuses almost every heavy request in microseconds) or a peer's 404 for a route it
    // lacks would otherwise count as served requests. The success rate is kept beside it.
    answered += lr.rps;
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
  cpu["window_sched_s"] =
      m.window.sched_s ? json::value(six(*m.window.sched_s)) : json::value(nullptr);
  cpu["window_wall_s"] = six(m.window.wall_s);
  cpu["cores_ticks"] = m.window_s > 0 ? py_round(m.window.ticks_s / m.window_s, 2) : 0.0;
  cpu["idle_cores_ticks"] = idle_wall > 0 ? py_round(m.idle.ticks_s / idle_wall, 3) : 0.0;
  if (m.load.gen_cpu_s) cpu["gen_cpu_s"] = six(*m.load.gen_cpu_s);
  if (m.steal_cores) cpu["steal_cores"] = py_round(*m.steal_cores, 3);
  // perf's count over the window, per response (all routes); null without perf.
  cpu["syscalls"] = m.syscalls ? json::value(*m.syscalls) : json::value(nullptr);
  cpu["syscalls_per_req"] = m.syscalls && answered > 0 && m.window_s > 0
                                ? json::value(py_round(*m.syscalls / (answered * m.window_s), 3))
                                : json::value(nullptr);
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
  if (m.stats_after) r.reported_hosts = m.stats_after->hosts;
  if (c.fleet > 0) {
    r.peer_command = m.peer_command;
    r.peer_processes = m.processes;
  }
  if (peer) {
    r.peer_command = m.peer_command;
    r.peer_processes = m.processes;
  }
  return r;
}

}  // namespace knit::bench

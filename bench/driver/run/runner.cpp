// Runs a plan: for every case and repetition, start a server, measure idle CPU,
// warm up, measure a window, stop it; append one row per case and render the report.
#include "driver/run/runner.hpp"

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

#include "driver/report/report.hpp"
#include "driver/run/cpu_list.hpp"
#include "driver/run/json_write.hpp"
#include "driver/run/numfmt.hpp"
#include "driver/run/peers.hpp"
#include "driver/system/case_process.hpp"
#include "driver/system/interrupt.hpp"
#include "driver/system/process_tree.hpp"
#include "driver/system/single_instance.hpp"
#include "driver/system/spawn.hpp"

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

std::string case_summary(const plan_case& c) {
  std::string s = c.tag + " " + c.mode + " " + c.server_mode;
  if (c.threads) s += " threads=" + std::to_string(c.threads);
  if (c.hosts != 1) s += " hosts=" + std::to_string(c.hosts);
  if (!c.spin.empty()) s += " spin=" + c.spin;
  if (!c.park.empty()) s += " park=" + c.park;
  if (!c.doorbell.empty()) s += " doorbell=" + c.doorbell;
  if (!c.steal.empty()) s += " steal=" + c.steal;
  for (const auto& [k, v] : c.env) s += " " + k + "=" + v;
  if (!c.cost_profile.empty()) s += " profile=" + c.cost_profile;
  if (c.extra_cost_us) s += " extra=" + std::to_string(*c.extra_cost_us) + "us";
  return s;
}

std::string file_stem(int index, const plan_case& c, int rep) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%03d", index);
  std::string s = std::string(buf) + "-" + c.tag + "-" + c.mode;
  if (!c.cost_profile.empty()) s += "-" + c.cost_profile;
  if (c.extra_cost_us) s += "-c" + std::to_string(*c.extra_cost_us);
  return s + "-r" + std::to_string(rep);
}

std::string result_line(const result_row& r) {
  std::ostringstream s;
  s << "      total " << r.total_rps << " rps (";
  bool first = true;
  for (const char* n : {"ping", "ssr", "jwt", "plaintext"})
    if (auto it = r.routes.find(n); it != r.routes.end()) {
      s << (first ? "" : " / ") << n << " " << fixed(it->second.rps, 0);
      first = false;
    }
  s << "), /ping p99 " << (r.routes.count("ping") ? fixed(r.routes.at("ping").p99, 2) : "?")
    << " ms, server " << fixed(r.cores, 2) << " cores, idle " << fixed(r.idle_cores, 3) << " cores";
  if (r.cpu_us_per_req) s << ", " << *r.cpu_us_per_req << " CPU-us/req";
  for (const auto& [n, rs] : r.routes) {
    if (rs.rate_met && !*rs.rate_met) s << "  RATE NOT MET on /" << n;
    if (rs.ok < 1.0) s << "  /" << n << " success " << fixed(rs.ok * 100, 2) << "%";
  }
  return s.str();
}

json::object meta_run(const run_options& cfg, const machine_description& m) {
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
  run["separate_cpus"] = cfg.separate_cpus;
  run["machine"] = json::object{{"model", m.model},
                                {"cpus", m.cpus},
                                {"kernel", m.kernel},
                                {"hostname", m.hostname},
                                {"date", m.date}};
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

}  // namespace

std::string clock_text(double seconds) {
  long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02ld:%02ld", s / 60, s % 60);
  return buf;
}

int run_benchmark(const run_options& cfg) {
  auto fail = [](int code, const std::string& msg) {
    std::cerr << "knit-bench: " << msg << "\n";
    return code;
  };
  if (find_in_path(cfg.server_exe).empty())
    return fail(
        2, "server binary not found or not executable: " + cfg.server_exe + " (use --server PATH)");
  if (find_in_path(cfg.load_exe).empty())
    return fail(
        2, "load generator not found or not executable: " + cfg.load_exe + " (use --load PATH)");
  if (cfg.cases.empty()) return fail(2, "the plan has no cases");
  if (cfg.separate_cpus && cpu_sets_overlap(cfg.server_cpus, cfg.gen_cpus)) {
    auto shown = [](const std::vector<int>& cpus) {
      return cpus.empty() ? std::string("unpinned (every CPU)") : format_cpu_list(cpus);
    };
    return fail(2, "plan " + cfg.plan_name +
                       " needs the generator on CPUs of its own, but server CPUs " +
                       shown(cfg.server_cpus) + " and generator CPUs " + shown(cfg.gen_cpus) +
                       " overlap: give --server-cpus and --gen-cpus that do not (at least 2 "
                       "CPUs)");
  }

  std::unique_ptr<instance_lock> lock;
  try {
    lock = std::make_unique<instance_lock>(cfg.lock_path);
  } catch (const std::exception& e) {
    return fail(3, e.what());
  }
  // A server or load generator still running from an earlier (crashed) run would
  // share the CPUs and skew every number; report it rather than kill anything.
  auto strays = processes_running({cfg.server_exe, cfg.load_exe}, ::getpid());
  if (!strays.empty()) {
    std::string pids;
    for (pid_t p : strays) {
      pids += ' ';  // appended, not " " + to_string(p): GCC 12 warns falsely (-Wrestrict) on that
      pids += std::to_string(p);
    }
    return fail(3, "already running from " + cfg.server_exe + " or " + cfg.load_exe + ": PID" +
                       pids +
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
  machine_description machine = machine_info();
  meta["runs"].get_array().push_back(meta_run(cfg, machine));
  auto& run_meta = meta["runs"].get_array().back().get_object();
  write_file(meta_path, to_json_pretty(meta));

  install_interrupt_handlers();
  const int total_cases = static_cast<int>(cfg.cases.size()) * cfg.repeat;
  std::cerr << "knit-bench: " << cfg.plan_name << " plan, " << cfg.cases.size() << " cases x "
            << cfg.repeat << " repetition(s); idle " << seconds_text(cfg.idle_s) << " s, warm-up "
            << seconds_text(cfg.warmup_s) << " s, window " << seconds_text(cfg.window_s)
            << " s; about "
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
    for (const plan_case& c : cfg.cases) {
      if (interrupted()) {
        status = "interrupted";
        break;
      }
      ++k;
      double per_case = k > 1 ? spent / (k - 1) : estimate;
      std::cerr << "[" << k << "/" << total_cases << "] " << case_summary(c) << " rep " << rep + 1
                << "/" << cfg.repeat << "  ETA " << clock_text(per_case * (total_cases - k + 1))
                << "\n";
      auto t0 = std::chrono::steady_clock::now();
      try {
        double rate = 0;
        if (c.mode == "rate") {
          if (c.rate_per_route > 0) {
            rate = c.rate_per_route;
          } else {
            auto it = inline_total.find(reference_key(c));
            if (it == inline_total.end())
              throw case_error(
                  "no inline saturating measurement to derive the rate from (did it fail?)");
            rate = std::max(1.0, std::round(cfg.rate_fraction * it->second / 3.0));
          }
        }
        case_measurement m = measure_quietest(c, cfg, logs, file_stem(k, c, rep), bodies, rate);
        result_row row = build_row(c, rep, m, cfg);
        for (const auto& need : case_routes(c))
          if (!row.routes.count(need)) throw case_error("knit-load JSON has no route " + need);
        append_row_file(rows_path.string(), row);
        ++measured;
        if (c.server_mode == "inline" && c.mode == "sat" && !inline_total.count(reference_key(c)))
          inline_total[reference_key(c)] = static_cast<double>(row.total_rps);
        std::cerr << result_line(row) << "\n";
        for (const auto& note : m.notes) std::cerr << "      note: " << note << "\n";
      } catch (const fatal_error& e) {
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
  if (status == "complete" && failed)
    status = "complete, " + std::to_string(failed) + " case(s) failed";
  run_meta["finished"] = wall_clock_text();
  run_meta["status"] = status;
  run_meta["rows_written"] = measured;
  write_file(meta_path, to_json_pretty(meta));

  if (fs::exists(rows_path)) {
    try {
      std::vector<std::string> warnings;
      std::string report = write_report(rows_path.string(), cfg.charts, &warnings);
      for (const auto& w : warnings) std::cerr << "knit-bench: warning: " << w << "\n";
      std::cerr << "knit-bench: " << measured << " row(s) -> " << rows_path.string() << "; report "
                << report << "\n";
    } catch (const std::exception& e) {
      std::cerr << "knit-bench: report failed: " << e.what() << "\n";
      return 1;
    }
  }
  if (status.rfind("aborted", 0) == 0 || status == "interrupted") return 1;
  return failed ? 1 : 0;
}

}  // namespace knit::bench

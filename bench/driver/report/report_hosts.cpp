// The hosts sweep section of report.md ("Many event loops"): per (H hosts, W workers), knit
// against H loop-per-core inline servers and H loops sharing one asio::thread_pool(W). The
// ratios are the peer comparison's (paired_ratio, ratio_cell): only the peers chosen differ.
#include "driver/report/report_hosts.hpp"

#include <algorithm>

#include "driver/report/peer_report.hpp"
#include "driver/report/report_cells.hpp"
#include "driver/run/cpu_list.hpp"
#include "driver/run/numfmt.hpp"

namespace knit::bench::report_detail {

std::optional<double> heavy_rps(const result_row& r) {
  auto ssr = r.routes.find("ssr"), jwt = r.routes.find("jwt");
  if (ssr == r.routes.end() || jwt == r.routes.end()) return std::nullopt;
  return ssr->second.rps + jwt->second.rps;
}

namespace {

std::optional<double> ping_p99(const result_row& r) {
  auto it = r.routes.find("ping");
  if (it == r.routes.end()) return std::nullopt;
  return it->second.p99;
}

// The measures of the sweep, as the peer comparison states them (higher is better or not).
// The goals are the ones the many-loops design is held to: knit's /ping p99 at most half the
// inline servers' (head-of-line blocking gone from every loop), heavy throughput at least
// 0.9x and CPU per request at most 1.0x the asio peer's; as ratios above 1x = knit ahead:
// >= 2, >= 0.9, >= 1.
struct sweep_measure {
  peer_metric metric;
  bool vs_inline;  // compared with inline at H (else with asio at H, W)
  double goal;     // the ratio knit must reach; 0 = no goal
};

std::vector<sweep_measure> sweep_measures(const std::string& mode) {
  const bool rate = mode == "rate";
  peer_metric heavy{"heavy rps", mode, true, true, rate, heavy_rps};
  peer_metric p99{"/ping p99", mode, false, false, rate, ping_p99};
  peer_metric cpu{"CPU-us/req", mode, false,
                  true,         rate, [](const result_row& r) {
                    return opt_d(r.cpu_us_per_req); }};
  const bool sat = mode == "sat";  // the goals are stated for saturating load
  return {{heavy, true, 0},
          {p99, true, sat ? 2.0 : 0},
          {heavy, false, sat ? 0.9 : 0},
          {p99, false, 0},
          {cpu, false, sat ? 1.0 : 0}};
}

// Worker counts measured at one host count: knit's pool sizes, auto's and asio's threads.
std::vector<int> worker_counts(const std::vector<measured_config>& cs, const config_scope& s) {
  std::vector<int> w = pool_sizes(cs, s);
  for (const auto& c : cs)
    if (in_scope(c, s) && (c.policy == config_kind::asio || c.policy == config_kind::auto_mode))
      w.push_back(c.threads);
  std::sort(w.begin(), w.end());
  w.erase(std::unique(w.begin(), w.end()), w.end());
  return w;
}

// The knit rows at (H, W): the default policy, then auto.
std::vector<const measured_config*> knit_at(const std::vector<measured_config>& cs,
                                            const config_scope& s, int w) {
  std::vector<const measured_config*> v;
  if (auto* c = default_policy_config(cs, s, w)) v.push_back(c);
  if (auto* c = mode_config(cs, s, config_kind::auto_mode, w)) v.push_back(c);
  return v;
}

std::string figures_row(const measured_config& c, int hosts, const std::string& workers) {
  rep_stat gen = c.stat([](const result_row& r) { return std::optional<double>(r.gen_cores); });
  return row({std::to_string(hosts), workers, c.label + mark(c), cell(c.stat(heavy_rps), 0),
              cell(c.route("ping", &route_row_stats::p99), 2), cell(cpu_us(c), 0), cell(idle(c), 3),
              cell(cores(c), 2), cell(gen, 2)});
}

// Rows whose generator used at least 90% of its CPUs: their throughput may be the
// generator's limit rather than the server's.
std::vector<std::string> generator_bound(const std::vector<const measured_config*>& shown) {
  std::vector<std::string> v;
  for (const measured_config* c : shown)
    for (const result_row* r : c->reps) {
      const boost::json::value* g = r->cpu_layout.if_contains("gen_cpus");
      if (!g || !g->is_string()) continue;
      std::vector<int> cpus;
      try {
        cpus = parse_cpu_list(std::string(g->get_string()));
      } catch (const std::exception&) {
        continue;
      }
      if (!cpus.empty() && r->gen_cores >= 0.9 * static_cast<double>(cpus.size())) {
        v.push_back("`" + c->label + "`");
        break;
      }
    }
  return v;
}

void mode_tables(md_stream& md, const std::vector<measured_config>& cs, const std::string& profile,
                 const std::string& mode) {
  std::vector<const measured_config*> shown;
  std::string figures, ratios;
  std::vector<std::string> missed;
  const auto measures = sweep_measures(mode);
  for (int h : host_counts(cs, profile)) {
    const config_scope s{profile, std::nullopt, mode, h};
    const measured_config* in = inline_config(cs, s);
    if (in) {
      figures += figures_row(*in, h, "-");
      shown.push_back(in);
    }
    for (int w : worker_counts(cs, s)) {
      const measured_config* asio = mode_config(cs, s, config_kind::asio, w);
      for (const measured_config* k : knit_at(cs, s, w)) {
        figures += figures_row(*k, h, std::to_string(w));
        shown.push_back(k);
        std::vector<std::string> cells = {k->label + mark(*k)};
        for (const auto& m : measures) {
          const measured_config* peer = m.vs_inline ? in : asio;
          const bool done = peer && (!m.metric.needs_rate_met || (met_rate(*k) && met_rate(*peer)));
          rep_stat r = done ? paired_ratio(*k, *peer, m.metric) : rep_stat{};
          cells.push_back(ratio_cell(r) + (r && (any_foreign_flagged(*k) || mark(*peer) != "")
                                               ? kForeignMark
                                               : ""));
          if (r && m.goal > 0 && r.median < m.goal && k->policy != config_kind::auto_mode)
            missed.push_back("`" + k->label + "` " + m.metric.name + " vs `" + peer->label +
                             "`: " + ratio_cell(r) + " (goal " + fixed(m.goal, 1) + "\u00d7)");
        }
        ratios += row(cells);
      }
      if (asio) {
        figures += figures_row(*asio, h, std::to_string(w));
        shown.push_back(asio);
      }
    }
  }
  if (figures.empty()) return;
  md << "### " << (mode == "sat" ? "Saturating" : "Fixed rate") << "\n\n"
     << header({"hosts", "workers", "configuration", "heavy rps", "/ping p99 ms", "CPU-us/req",
                "idle cores", "server cores", "gen cores"})
     << figures << "\n";
  if (!ratios.empty()) {
    std::vector<std::string> head = {"knit"};
    for (const auto& m : measures)
      head.push_back(m.metric.name + " vs " + (m.vs_inline ? "inline" : "asio") +
                     (m.goal > 0 ? " (goal \u2265 " + fixed(m.goal, 1) + "\u00d7)" : ""));
    md << "knit against the peers at its point (inline with as many hosts; asio with as many "
          "hosts and workers):\n\n"
       << header(head) << ratios << "\n";
    if (mode == "sat") {
      if (missed.empty()) md << "Every knit row (default policy) meets the goals here.\n\n";
      else {
        md << "Below the goal:\n\n";
        for (const auto& m : missed) md << "- " << m << "\n";
        md << "\n";
      }
    }
  }
  auto bound = generator_bound(shown);
  if (!bound.empty()) {
    md << "- The generator used 90% or more of its CPUs in ";
    for (size_t i = 0; i < bound.size(); ++i) md << (i ? ", " : "") << bound[i];
    md << ": their throughput may be the generator's limit, not the server's.\n\n";
  }
}

}  // namespace

std::string hosts_section(const std::vector<measured_config>& cs, const std::string& profile,
                          const std::vector<chart_ref>& charts) {
  const std::vector<int> hosts = host_counts(cs, profile);
  if (hosts.empty() || hosts.back() <= 1) return "";
  md_stream md;
  md << "## Many event loops" << (profile.empty() ? "" : " (cost profile " + profile + ")")
     << "\n\n"
     << "H hosts (`KNIT_HOSTS`): H event-loop threads, each with its own io_context and "
        "`SO_REUSEPORT` listener on the port, a connection on one loop for life. At each (H, W): "
        "knit's pool of W workers shared by the H loops (`threads: W, hosts: H`), H "
        "loop-per-core servers running every route on their loop (`inline, hosts: H`), and H "
        "loops sharing one `asio::thread_pool(W)`, each result posted back to the loop that "
        "asked (`asio: W, hosts: H`). *heavy rps* is /ssr + /jwt served per second; *gen cores* "
        "the load generator's CPU. Ratios are knit / peer for heavy rps and peer / knit for "
        "/ping p99 and CPU-us/req, so **above 1\u00d7 knit is ahead**; median over "
        "repetitions paired by repetition number, min\u2013max in parentheses.\n\n";
  for (const char* mode : {"sat", "rate"}) mode_tables(md, cs, profile, mode);
  for (const auto& ch : charts)
    if (ch.section == "hosts:" + profile) md << "![" << ch.title << "](" << ch.file << ")\n\n";
  return md.str();
}

}  // namespace knit::bench::report_detail

// Sections A, B and C of report.md, shaped like the reference benchmark's tables:
// saturating throughput and latency, fixed-rate latency, and what the timer policy is worth.
#include "driver/report/report_reference_tables.hpp"

#include <algorithm>

#include "driver/report/report_notes.hpp"
#include "driver/run/numfmt.hpp"

namespace knit::bench::report_detail {

void section_a(md_stream& md, const std::vector<measured_config>& cs, const config_scope& sat) {
  auto rows = headline(cs, sat);
  md << "### A. Saturating load - throughput\n\n";
  if (rows.empty()) {
    md << "No saturating rows for this profile.\n\n";
    return;
  }
  rep_stat conns = rows.front()->stat([](const result_row& r) -> std::optional<double> {
    if (!r.conns) return std::nullopt;
    return static_cast<double>(*r.conns);
  });
  md << "Closed loop, "
     << (conns ? fixed(conns.median, 0) + " connections per route"
               : "connections per route not recorded")
     << ", all three routes at once. Rows are the inline server and the default policy at each "
        "pool size, "
        "then knit's auto mode and the peers (asio, multi, external servers) where measured.\n\n";
  const measured_config* base = inline_config(cs, sat);
  rep_stat base_total = base ? total(*base) : rep_stat{};
  md << header({"pool", "/ping", "/ssr", "/jwt", "total rps", "vs inline", "idle cores",
                "server cores", "rps/core", "CPU-us/req"});
  for (const measured_config* c : rows) {
    rep_stat t = total(*c);
    const bool same_work = routes_of(*c).size() == 3;
    std::string vs = (c == base || !base_total || !t || !same_work)
                         ? "-"
                         : pct_change(base_total.median, t.median);
    md << row({label_of(*c), cell(c->route("ping", &route_row_stats::rps), 0),
               cell(c->route("ssr", &route_row_stats::rps), 0),
               cell(c->route("jwt", &route_row_stats::rps), 0), cell(t, 0), vs, cell(idle(*c), 3),
               cell(cores(*c), 2), cell(rps_core(*c), 0), cell(cpu_us(*c), 0)});
  }
  md << "\nLatency under the same saturating load (p50 / p99, ms):\n\n";
  md << header({"pool", "/ping", "/ssr", "/jwt"});
  for (const measured_config* c : rows)
    md << row({label_of(*c), lat_pair(*c, "ping"), lat_pair(*c, "ssr"), lat_pair(*c, "jwt")});
  bool deep = false;
  for (const measured_config* c : rows)
    if (c->route_opt("ping", &route_row_stats::p999)) deep = true;
  if (deep) {
    md << "\nDeeper percentiles (p90 / p99.9 / max, ms). Short single windows cannot support "
          "p99.9; "
          "read it with the repetition spread:\n\n";
    md << header({"pool", "/ping", "/ssr", "/jwt"});
    for (const measured_config* c : rows) {
      std::vector<std::string> cells = {label_of(*c)};
      for (const char* r : kRoutes)
        cells.push_back(cell(c->route_opt(r, &route_row_stats::p90), 2) + " / " +
                        cell(c->route_opt(r, &route_row_stats::p999), 2) + " / " +
                        cell(c->route_opt(r, &route_row_stats::max), 2));
      md << row(cells);
    }
  }
  md << "\n";
}

void section_b(md_stream& md, const std::vector<measured_config>& cs, const config_scope& rate) {
  auto rows = headline(cs, rate);
  md << "### B. Fixed rate - latency\n\n";
  if (rows.empty()) {
    md << "No fixed-rate rows for this profile.\n\n";
    return;
  }
  // Offered rate: recorded in our rows; the reference rows only show what was
  // achieved.
  rep_stat offered = rows.front()->stat([](const result_row& r) { return r.rate_per_route; });
  if (offered) {
    md << "Offered " << cell(offered, 0) << " rps per route (" << fixed(3 * offered.median, 0)
       << " total), a share of the inline saturating total measured earlier in the same run, "
          "so every configuration does the same work and only latency varies.";
  } else if (auto* in = inline_config(cs, rate)) {
    md << "Offered rate not recorded in these rows; the inline server achieved "
       << fixed(total(*in).median, 0) << " rps in total.";
  }
  std::vector<std::string> missed, failed;
  bool any_met_info = false;
  for (const measured_config* c : rows) {
    for (const result_row* r : c->reps)
      for (const auto& [name, rs] : r->routes) {
        if (rs.rate_met) any_met_info = true;
        if (rs.rate_met && !*rs.rate_met) missed.push_back(c->label + " /" + name);
        if (rs.ok < 1.0)
          failed.push_back(c->label + " /" + name + " (" + fixed(rs.ok * 100, 2) + "%)");
      }
  }
  auto uniq = [](std::vector<std::string>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  uniq(missed);
  uniq(failed);
  if (any_met_info) {
    if (missed.empty()) md << " Every configuration achieved the offered rate";
    else {
      md << " **Rate not achieved:** ";
      for (size_t i = 0; i < missed.size(); ++i) md << (i ? ", " : "") << missed[i];
      md << "; latency there is not comparable";
    }
  }
  if (failed.empty())
    md << (any_met_info ? ", with a 100% success rate.\n\n"
                        : " Every configuration had a 100% success rate.\n\n");
  else {
    md << ". **Errors:** ";
    for (size_t i = 0; i < failed.size(); ++i) md << (i ? ", " : "") << failed[i];
    md << ".\n\n";
  }
  for (const char* r : kRoutes) {
    md << "**/" << r << "**" << (std::string(r) == "ping" ? " (never touches the pool)" : "")
       << "\n\n";
    md << header({"config", "p50", "p99", "server cores", "idle cores", "CPU-us/req"});
    for (const measured_config* c : rows) {
      if (!c->route(r, &route_row_stats::p50)) continue;  // a peer that does not serve this route
      md << row({label_of(*c), cell(c->route(r, &route_row_stats::p50), 2),
                 cell(c->route(r, &route_row_stats::p99), 2), cell(cores(*c), 2), cell(idle(*c), 3),
                 cell(cpu_us(*c), 0)});
    }
    md << "\n";
  }
}

void section_c(md_stream& md, const std::vector<measured_config>& cs, const config_scope& sat,
               const config_scope& rate) {
  md << "### C. What the timer policy is worth\n\n";
  std::vector<int> sizes = pool_sizes(cs, sat);
  for (int n : pool_sizes(cs, rate))
    if (std::find(sizes.begin(), sizes.end(), n) == sizes.end()) sizes.push_back(n);
  std::sort(sizes.begin(), sizes.end());
  if (sizes.empty()) {
    md << "No pooled rows for this profile.\n\n";
    return;
  }
  // Idle cores come from the saturating rows (as in the reference tables), else the fixed-rate
  // ones.
  auto pick = [&](int n, config_kind p) -> const measured_config* {
    if (auto* c = p == config_kind::default_policy ? default_policy_config(cs, sat, n)
                                                   : policy_config(cs, sat, n, p))
      return c;
    return p == config_kind::default_policy ? default_policy_config(cs, rate, n)
                                            : policy_config(cs, rate, n, p);
  };
  md << "Idle cores: CPU used with the server started and no load offered. The old default spins "
        "N*50us and then parks 1ms, so the model predicts N * spin / (spin + park) cores.\n\n";
  md << header({"N", "idle cores, old default", "model", "idle cores, default policy"},
               {true, true, true, true});
  for (int n : sizes) {
    const measured_config* old = pick(n, config_kind::old_default);
    const measured_config* dflt = pick(n, config_kind::default_policy);
    double model = n * (n * 50.0) / (n * 50.0 + 1000.0);
    md << row({std::to_string(n), old ? cell(idle(*old), 3) : "-", fixed(model, 3),
               dflt ? cell(idle(*dflt), 3) : "-"});
  }
  md << "\n";

  bool any_old = false;
  for (int n : sizes)
    if (policy_config(cs, sat, n, config_kind::old_default)) any_old = true;
  if (any_old) {
    md << "How much of the loaded CPU under the old default is idle spin (saturating):\n\n";
    md << header({"N", "loaded cores, old default", "idle cores", "useful (loaded - idle)"},
                 {true, true, true, true});
    for (int n : sizes) {
      const measured_config* old = policy_config(cs, sat, n, config_kind::old_default);
      if (!old) continue;
      rep_stat l = cores(*old), i = idle(*old);
      md << row({std::to_string(n), cell(l, 2), cell(i, 3),
                 (l && i) ? fixed(l.median - i.median, 2) : "-"});
    }
    md << "\n";
  }

  md << "#### The full CPU picture\n\nEvery pool size against every policy measured. **Bold** "
        "marks the default policy "
        "(the row used in sections A and B).\n\n";
  for (const config_scope* s : {&sat, &rate}) {
    auto v = scoped(cs, *s, true);
    if (v.empty()) continue;
    const bool is_sat = s->mode == "sat";
    md << (is_sat ? "Saturating load:\n\n" : "Fixed rate, so every row does the same work:\n\n");
    if (is_sat)
      md << header({"N", "policy", "idle cores", "server cores", "rps/core", "CPU-us/req"},
                   {true, false, true, true, true, true});
    else
      md << header({"N", "policy", "idle cores", "server cores", "CPU-us/req", "/ssr p99"},
                   {true, false, true, true, true, true});
    int last_n = -1;
    for (const measured_config* c : v) {
      const bool bold = c == default_policy_config(cs, *s, c->threads);
      auto b = [&](const std::string& x) { return bold && x != "-" ? "**" + x + "**" : x; };
      std::string n = c->threads == last_n ? "" : std::to_string(c->threads);
      last_n = c->threads;
      if (is_sat)
        md << row({n, b(c->policy_label) + mark(*c), b(cell(idle(*c), 3)), b(cell(cores(*c), 2)),
                   b(cell(rps_core(*c), 0)), b(cell(cpu_us(*c), 0))});
      else
        md << row({n, b(c->policy_label) + mark(*c), b(cell(idle(*c), 3)), b(cell(cores(*c), 2)),
                   b(cell(cpu_us(*c), 0)), b(cell(c->route("ssr", &route_row_stats::p99), 2))});
    }
    md << "\n";
  }

  // Before / after: the old default against the default policy at each size where both ran.
  std::string ba;
  for (auto it = sizes.rbegin(); it != sizes.rend(); ++it) {
    int n = *it;
    std::string who = "`threads: " + std::to_string(n) + "`";
    auto add = [&](const std::string& what, const rep_stat& o, const rep_stat& s, int dec,
                   const std::string& unit, const std::string& change) {
      if (!o || !s) return;
      ba += row({who + " " + what, cell(o, dec) + unit, cell(s, dec) + unit, change});
    };
    const measured_config* o_sat = policy_config(cs, sat, n, config_kind::old_default);
    const measured_config* s_sat = default_policy_config(cs, sat, n);
    const measured_config* o_rate = policy_config(cs, rate, n, config_kind::old_default);
    const measured_config* s_rate = default_policy_config(cs, rate, n);
    if (o_sat && s_sat && o_sat != s_sat) {
      rep_stat a = rps_core(*o_sat), b = rps_core(*s_sat);
      if (a && b) add("rps/core, saturating", a, b, 0, "", ratio_text(a.median, b.median, true));
    }
    if (o_rate && s_rate && o_rate != s_rate) {
      rep_stat a = cpu_us(*o_rate), b = cpu_us(*s_rate);
      if (a && b)
        add("CPU-us/request, fixed rate", a, b, 0, "", ratio_text(a.median, b.median, false));
      rep_stat pa = o_rate->route("ssr", &route_row_stats::p99),
               pb = s_rate->route("ssr", &route_row_stats::p99);
      if (pa && pb) add("/ssr p99, fixed rate", pa, pb, 2, "ms", pct_change(pa.median, pb.median));
    }
    const measured_config* o_i = o_sat ? o_sat : o_rate;
    const measured_config* s_i = o_sat ? s_sat : s_rate;
    if (o_i && s_i && o_i != s_i) {
      rep_stat a = idle(*o_i), b = idle(*s_i);
      if (a && b) add("idle cores", a, b, 3, "", ratio_text(a.median, b.median, false));
    }
  }
  if (!ba.empty()) {
    md << "#### Before and after\n\nSame machine, same workload; only the timer policy "
          "differs.\n\n";
    md << header({"", "old default", "default policy", "change"}, {false, true, true, false}) << ba
       << "\n";
  }
}

}  // namespace knit::bench::report_detail

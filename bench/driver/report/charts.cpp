// PNG charts for the report, drawn by the gnuplot binary (skipped with a warning
// when it is not installed).
#include "driver/report/charts.hpp"

#include <cstdlib>
#include <functional>
#include <map>
#include <optional>

#include "driver/report/chart_script.hpp"
#include "driver/report/charts_hosts.hpp"
#include "driver/run/numfmt.hpp"
#include "driver/system/spawn.hpp"

namespace knit::bench {
namespace {

using namespace chart_detail;

void profile_charts(const std::vector<measured_config>& cs, const std::string& profile,
                    chart_drawer& d, chart_set& out) {
  const std::string sec = "profile:" + profile;
  const std::string suffix = file_safe(profile.empty() ? "reference" : profile);
  config_scope sat{profile, std::nullopt, "sat"}, rate{profile, std::nullopt, "rate"};

  // 1. rps per route vs pool size, default policy, saturating.
  {
    std::vector<std::pair<std::string, std::vector<std::string>>> rows;
    auto add = [&](const measured_config* c, const std::string& label) {
      if (!c) return;
      rows.push_back({label,
                      {num(c->route("ping", &route_row_stats::rps)),
                       num(c->route("ssr", &route_row_stats::rps)),
                       num(c->route("jwt", &route_row_stats::rps))}});
    };
    add(inline_config(cs, sat), "inline");
    for (int n : pool_sizes(cs, sat)) add(default_policy_config(cs, sat, n), std::to_string(n));
    if (rows.size() >= 2) {
      std::vector<std::string> cols = {"/ping", "/ssr", "/jwt"};
      d.draw(
          {"rps_by_pool_" + suffix, "Saturating rps per route vs pool size (default policy)", sec,
           categorical_block("d", cols, rows) +
               "set title \"Saturating load: rps per route vs pool size (default policy)\"\n"
               "set xlabel \"pool size\"\nset ylabel \"requests/s\"\nset yrange [0:*]\n" +
               plot_columns("d", cols, "linespoints lw 2 pt 7")},
          out);
    }
  }

  // 2. /ping p99 per configuration (one panel per load mode).
  {
    std::string body;
    int panels = 0;
    for (const config_scope* s : {&sat, &rate}) {
      std::vector<std::pair<std::string, std::vector<std::string>>> rows;
      for (const auto& c : cs)
        if (in_scope(c, *s)) rows.push_back({c.tag, {num(c.route("ping", &route_row_stats::p99))}});
      if (rows.empty()) continue;
      std::string block = s->mode == "sat" ? "sat" : "rate";
      body += categorical_block(block, {"/ping p99"}, rows);
      ++panels;
    }
    if (panels > 0) {
      std::string plots;
      for (const config_scope* s : {&sat, &rate}) {
        if (body.find("$" + std::string(s->mode == "sat" ? "sat" : "rate") + " <<") ==
            std::string::npos)
          continue;
        plots += std::string("set title \"/ping p99 per configuration, ") +
                 (s->mode == "sat" ? "saturating" : "fixed rate") + "\"\n" + "plot $" +
                 (s->mode == "sat" ? "sat" : "rate") +
                 " using 2:xtic(1) with boxes fill solid 0.6 notitle\n";
      }
      d.draw(
          {"ping_p99_" + suffix, "/ping p99 per configuration", sec,
           body + "set multiplot layout " + std::to_string(panels) + ",1\n" +
               "set style fill solid 0.6\nset boxwidth 0.7\nset ylabel \"ms\"\nset yrange [0:*]\n"
               "set xtics rotate by -30\nunset key\n" +
               plots + "unset multiplot\n"},
          out);
    }
  }

  // knit against the peers: saturating total rps and fixed-rate server cores for inline,
  // the default policy at each N, auto, asio, multi and external peers, side by side.
  {
    auto headline = [&](const config_scope& s) {
      std::vector<const measured_config*> v;
      if (auto* c = inline_config(cs, s)) v.push_back(c);
      for (int n : pool_sizes(cs, s))
        if (auto* c = default_policy_config(cs, s, n)) v.push_back(c);
      for (config_kind p :
           {config_kind::auto_mode, config_kind::asio, config_kind::multi, config_kind::peer})
        for (const auto& c : cs)
          if (in_scope(c, s) && c.policy == p) v.push_back(&c);
      return v;
    };
    bool peers = false;
    for (const auto& c : cs)
      if ((in_scope(c, sat) || in_scope(c, rate)) && is_peer(c.policy)) peers = true;
    std::vector<std::pair<std::string, std::vector<std::string>>> rps_rows, core_rows;
    for (const measured_config* c : headline(sat))
      if (routes_of(*c).size() == 3)
        rps_rows.push_back({c->label, {num(c->stat([](const result_row& r) {
                              return std::optional<double>(static_cast<double>(r.total_rps));
                            }))}});
    for (const measured_config* c : headline(rate))
      if (routes_of(*c).size() == 3)
        core_rows.push_back(
            {c->label,
             {num(c->stat([](const result_row& r) { return std::optional<double>(r.cores); }))}});
    if (peers && (!rps_rows.empty() || !core_rows.empty())) {
      std::string body, plots;
      int panels = 0;
      if (!rps_rows.empty()) {
        body += categorical_block("rps", {"total rps"}, rps_rows);
        plots +=
            "set title \"Saturating total rps (median)\"\nset ylabel \"requests/s\"\n"
            "plot $rps using 2:xtic(1) with boxes notitle\n";
        ++panels;
      }
      if (!core_rows.empty()) {
        body += categorical_block("cores", {"server cores"}, core_rows);
        plots +=
            "set title \"Server cores at the fixed rate (same work, median)\"\nset ylabel "
            "\"cores\"\n"
            "plot $cores using 2:xtic(1) with boxes notitle\n";
        ++panels;
      }
      d.draw({"peers_" + suffix, "knit and the peers: saturating rps, fixed-rate cores", sec,
              body + "set multiplot layout " + std::to_string(panels) + ",1\n" +
                  "set style fill solid 0.6\nset boxwidth 0.7\nset yrange [0:*]\nset xtics rotate "
                  "by -30\nunset key\n" +
                  plots + "unset multiplot\n"},
             out);
    }
  }

  // 3 and 4. Idle cores and CPU-us/request vs N, one line per policy (saturating).
  auto per_policy = [&](const std::string& stem, const std::string& title,
                        const std::string& ylabel,
                        const std::function<rep_stat(const measured_config&)>& metric,
                        bool with_model) {
    std::vector<int> sizes = pool_sizes(cs, sat);
    if (sizes.empty()) return;
    std::map<std::string, std::vector<std::pair<int, rep_stat>>> series;
    std::vector<std::string> order;
    auto put = [&](const std::string& name, int n, const rep_stat& v) {
      if (!v) return;
      if (!series.count(name)) order.push_back(name);
      series[name].push_back({n, v});
    };
    for (int n : sizes) {
      if (auto* c = default_policy_config(cs, sat, n)) put("default policy", n, metric(*c));
      if (auto* c = policy_config(cs, sat, n, config_kind::old_default))
        put("old default (N*50us, park 1ms)", n, metric(*c));
      if (auto* c = policy_config(cs, sat, n, config_kind::flat50)) put("flat 50us", n, metric(*c));
      if (auto* c = policy_config(cs, sat, n, config_kind::no_spin); c && !c->stands_for_default)
        put("no spin", n, metric(*c));
    }
    // auto and the asio / multi peers at their N, beside knit's pool.
    for (config_kind p : {config_kind::auto_mode, config_kind::asio, config_kind::multi})
      for (const auto& c : cs)
        if (in_scope(c, sat) && c.policy == p) put(policy_name(p), c.threads, metric(c));
    if (auto* c = inline_config(cs, sat); c && !with_model) {
      rep_stat v = metric(*c);
      put("inline", sizes.front(), v);
      put("inline", sizes.back(), v);
    }
    if (order.empty()) return;
    std::string body, plot = "plot ";
    int i = 0;
    for (const auto& name : order) {
      std::string block = "s" + std::to_string(i);
      body += "$" + block + " << EOD\n";
      for (const auto& [n, v] : series[name])
        body += std::to_string(n) + " " + shortest(v.median) + "\n";
      body += "EOD\n";
      if (i) plot += ", \\\n     ";
      plot += "$" + block + " using 1:2 with linespoints lw 2 pt 7 title " + quoted(name);
      ++i;
    }
    if (with_model) {
      body += "$model << EOD\n";
      for (int n : sizes)
        body += std::to_string(n) + " " + shortest(n * (n * 50.0) / (n * 50.0 + 1000.0)) + "\n";
      body += "EOD\n";
      plot +=
          ", \\\n     $model using 1:2 with lines dt 2 lw 2 title \"model N*spin/(spin+park), old "
          "default\"";
    }
    d.draw({stem + "_" + suffix, title, sec,
            body + "set title " + quoted(title) + "\nset xlabel \"pool size N\"\nset ylabel " +
                quoted(ylabel) + "\nset yrange [0:*]\nset xtics (" +
                [&] {
                  std::string t;
                  for (int n : sizes) t += (t.empty() ? "" : ", ") + std::to_string(n);
                  return t;
                }() +
                ")\n" + plot + "\n"},
           out);
  };
  per_policy(
      "idle_by_n", "Idle cores vs pool size, per timer policy", "cores with no load",
      [](const measured_config& c) {
        return c.stat([](const result_row& r) { return std::optional<double>(r.idle_cores); });
      },
      true);
  per_policy(
      "cpu_per_req_by_n", "CPU-us per request vs pool size (saturating)", "CPU-us / request",
      [](const measured_config& c) {
        return c.stat([](const result_row& r) -> std::optional<double> {
          if (!r.cpu_us_per_req) return std::nullopt;
          return static_cast<double>(*r.cpu_us_per_req);
        });
      },
      false);
}

void sweep_charts(const std::vector<measured_config>& cs, const std::string& profile,
                  chart_drawer& d, chart_set& out) {
  const sweep_axes axes = sweep_axes_of(cs, profile);
  const std::vector<int>& costs = axes.costs;
  const std::vector<int>& sizes = axes.sizes;
  if (costs.empty()) return;
  std::vector<std::string> cols = {"inline"};
  for (int n : sizes) cols.push_back("threads: " + std::to_string(n));

  auto block = [&](const std::string& name, const std::string& mode,
                   const std::function<rep_stat(const measured_config&)>& f) {
    std::vector<std::pair<std::string, std::vector<std::string>>> rows;
    for (int cost : costs) {
      config_scope s{profile, cost, mode};
      std::vector<std::string> vals;
      auto* in = inline_config(cs, s);
      vals.push_back(in ? num(f(*in)) : "?");
      for (int n : sizes) {
        auto* c = default_policy_config(cs, s, n);
        vals.push_back(c ? num(f(*c)) : "?");
      }
      rows.push_back({std::to_string(cost), vals});
    }
    return categorical_block(name, cols, rows);
  };
  std::string body = block("rps", "sat",
                           [](const measured_config& c) {
                             return c.stat([](const result_row& r) {
                               return std::optional<double>(static_cast<double>(r.total_rps));
                             });
                           }) +
                     block("p99", "rate", [](const measured_config& c) {
                       return c.route("ping", &route_row_stats::p99);
                     });
  body +=
      "set key outside right top\nset multiplot layout 2,1\nset xlabel \"extra CPU per /ssr and "
      "/jwt call (us)\"\nset yrange [0:*]\n";
  body += "set title \"Saturating total rps\"\nset ylabel \"requests/s\"\n" +
          plot_columns("rps", cols, "linespoints lw 2 pt 7");
  body += "set title \"/ping p99 at fixed rate\"\nset ylabel \"ms\"\n" +
          plot_columns("p99", cols, "linespoints lw 2 pt 7");
  body += "unset multiplot\n";
  d.draw({"cost_sweep_" + file_safe(profile.empty() ? "reference" : profile),
          "Cost sweep: where pooling starts to pay", "sweep:" + profile, body},
         out);
}

}  // namespace

chart_set render_charts(const std::vector<measured_config>& configs,
                        const std::string& report_dir) {
  chart_set out;
  std::string gnuplot, wanted = "gnuplot";
  if (const char* g = std::getenv("KNIT_BENCH_GNUPLOT")) {
    wanted = g;
    if (std::string(g).empty()) {
      out.warnings.push_back("charts skipped: KNIT_BENCH_GNUPLOT is empty");
      return out;
    }
    gnuplot = find_in_path(g);
  } else {
    gnuplot = find_in_path("gnuplot");
  }
  if (gnuplot.empty()) {
    out.warnings.push_back("charts skipped: " + wanted + " not found (install gnuplot-nox)");
    return out;
  }
  chart_drawer d(report_dir, gnuplot);
  for (const auto& p : profiles(configs, false)) {
    profile_charts(configs, p, d, out);
    hosts_charts(configs, p, d, out);
  }
  for (const auto& p : profiles(configs, true)) sweep_charts(configs, p, d, out);
  return out;
}

}  // namespace knit::bench

// The hosts sweep's chart: heavy throughput and /ping p99 against the number of hosts, one
// line per configuration (inline, knit and asio at each worker count), saturating.
#include "driver/report/charts_hosts.hpp"

#include <algorithm>
#include <functional>

#include "driver/report/report_hosts.hpp"

namespace knit::bench::chart_detail {
namespace {

// Like plot_columns, with the peers drawn apart: inline black, knit solid, asio dashed in
// knit's colour at the same worker count, so the pair at one W reads as one colour.
std::string plot_sweep(const std::string& block, const std::vector<std::string>& cols,
                       size_t workers) {
  std::string p = "plot ";
  for (size_t i = 0; i < cols.size(); ++i) {
    // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string.
    std::string style = "linespoints lw 2 pt 7";
    if (i == 0) {
      style += " lc rgb \"black\"";
    } else {
      style += " lc ";
      style += std::to_string((i - 1) % workers + 1);
      if (i > workers) style += " dt 2";
    }
    if (i) p += ", \\\n     ";
    p += "$" + block + " using 0:" + std::to_string(i + 2) + (i == 0 ? ":xtic(1)" : "") + " with " +
         style + " title " + quoted(cols[i]);
  }
  return p + "\n";
}

}  // namespace

void hosts_charts(const std::vector<measured_config>& cs, const std::string& profile,
                  chart_drawer& d, chart_set& out) {
  const std::vector<int> hosts = host_counts(cs, profile);
  if (hosts.size() < 2) return;
  // The worker counts measured at any host count, for knit (default policy) and asio.
  std::vector<int> workers;
  for (const auto& c : cs)
    if (!c.extra_cost_us && c.profile == profile && c.mode == "sat" &&
        (c.policy == config_kind::asio || is_pool_policy(c.policy)))
      workers.push_back(c.threads);
  std::sort(workers.begin(), workers.end());
  workers.erase(std::unique(workers.begin(), workers.end()), workers.end());

  std::vector<std::string> cols = {"inline"};
  for (int w : workers) cols.push_back("knit W=" + std::to_string(w));
  for (int w : workers) cols.push_back("asio W=" + std::to_string(w));
  auto block = [&](const std::string& name,
                   const std::function<rep_stat(const measured_config&)>& f) {
    std::vector<std::pair<std::string, std::vector<std::string>>> rows;
    for (int h : hosts) {
      const config_scope s{profile, std::nullopt, "sat", h};
      std::vector<std::string> vals;
      const measured_config* in = inline_config(cs, s);
      vals.push_back(in ? num(f(*in)) : "?");
      for (int w : workers) {
        const measured_config* k = default_policy_config(cs, s, w);
        vals.push_back(k ? num(f(*k)) : "?");
      }
      for (int w : workers) {
        const measured_config* a = mode_config(cs, s, config_kind::asio, w);
        vals.push_back(a ? num(f(*a)) : "?");
      }
      rows.push_back({std::to_string(h), vals});
    }
    return categorical_block(name, cols, rows);
  };
  std::string body =
      block("heavy", [](const measured_config& c) { return c.stat(report_detail::heavy_rps); }) +
      block("p99", [](const measured_config& c) { return c.route("ping", &route_row_stats::p99); });
  body +=
      "set key outside right top\nset multiplot layout 2,1\nset xlabel \"hosts (event loops)\"\n"
      "set yrange [0:*]\n";
  body += "set title \"Saturating heavy rps (/ssr + /jwt)\"\nset ylabel \"requests/s\"\n" +
          plot_sweep("heavy", cols, workers.size());
  body += "set title \"/ping p99, saturating\"\nset ylabel \"ms\"\n" +
          plot_sweep("p99", cols, workers.size());
  body += "unset multiplot\n";
  d.draw({"hosts_" + file_safe(profile.empty() ? "reference" : profile),
          "Many event loops: heavy rps and /ping p99 by hosts", "hosts:" + profile, body},
         out);
}

}  // namespace knit::bench::chart_detail

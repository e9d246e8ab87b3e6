// The cost sweep section of report.md: where moving the heavy routes off the event loop
// starts to pay as the extra CPU per heavy call grows.
#include "driver/report/report_sweep.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "driver/report/report_notes.hpp"
#include "driver/run/numfmt.hpp"

namespace knit::bench::report_detail {

namespace {

// Smallest cost from which the best pool beats inline at every larger measured cost.
std::string crossover(const std::vector<int>& costs, const std::map<int, std::optional<bool>>& wins,
                      const std::string& what) {
  std::vector<int> known;
  for (int c : costs)
    if (wins.at(c).has_value()) known.push_back(c);
  if (known.empty()) return "- " + what + ": not enough data.\n";
  if (!*wins.at(known.back()))
    return "- " + what + ": pooling did not pay at the largest measured cost (" +
           std::to_string(known.back()) + " us); no crossover in range.\n";
  size_t i = known.size();
  while (i > 0 && *wins.at(known[i - 1])) --i;
  if (i == 0)
    return "- " + what + ": pooling pays at every measured cost, already at " +
           std::to_string(known.front()) + " us.\n";
  return "- " + what + ": pooling starts to pay between " + std::to_string(known[i - 1]) + " and " +
         std::to_string(known[i]) + " us of extra CPU per heavy call (and keeps paying above).\n";
}

}  // namespace

void sweep_section(md_stream& md, const std::vector<measured_config>& cs,
                   const std::string& profile, const std::vector<chart_ref>& charts) {
  const sweep_axes axes = sweep_axes_of(cs, profile);
  const std::vector<int>& costs = axes.costs;
  const std::vector<int>& sizes = axes.sizes;

  md << "## Cost sweep" << (profile.empty() ? "" : " (cost profile " + profile + ")") << "\n\n"
     << "Extra CPU added to every /ssr and /jwt call (`KNIT_SSR_COST_US`, `KNIT_JWT_COST_US`): "
        "where does moving "
        "the heavy routes off the event loop start to pay? Pools use the default policy; the "
        "crossover below compares "
        "them with inline, and auto and the asio peer are shown beside them.\n\n";

  // knit's auto mode and the peers (asio, multi) at each thread count measured in the sweep.
  std::vector<std::pair<config_kind, int>> others;
  for (const auto& c : cs)
    if (c.extra_cost_us && c.profile == profile &&
        (c.policy == config_kind::auto_mode || c.policy == config_kind::asio ||
         c.policy == config_kind::multi)) {
      std::pair<config_kind, int> k{c.policy, c.threads};
      if (std::find(others.begin(), others.end(), k) == others.end()) others.push_back(k);
    }
  std::vector<std::string> head = {"extra us/call", "inline"};
  for (int n : sizes) head.push_back("threads: " + std::to_string(n));
  for (const auto& [p, n] : others) head.push_back(policy_name(p) + ": " + std::to_string(n));
  std::map<int, std::optional<bool>> rps_wins, p99_wins;

  md << "Saturating total rps:\n\n";
  auto h = head;
  h.push_back("best pool vs inline");
  md << header(h);
  for (int cost : costs) {
    config_scope s{profile, cost, "sat"};
    const measured_config* in = inline_config(cs, s);
    rep_stat base = in ? total(*in) : rep_stat{};
    std::vector<std::string> cells = {std::to_string(cost), cell(base, 0) + (in ? mark(*in) : "")};
    std::optional<double> best;
    for (int n : sizes) {
      const measured_config* c = default_policy_config(cs, s, n);
      rep_stat t = c ? total(*c) : rep_stat{};
      cells.push_back(cell(t, 0) + (c ? mark(*c) : ""));
      if (t && (!best || t.median > *best)) best = t.median;
    }
    for (const auto& [p, n] : others) {
      const measured_config* c = mode_config(cs, s, p, n);
      cells.push_back(c ? cell(total(*c), 0) + mark(*c) : "-");
    }
    cells.push_back(base && best ? pct_change(base.median, *best) : "-");
    md << row(cells);
    rps_wins[cost] = (base && best) ? std::optional<bool>(*best > base.median) : std::nullopt;
  }
  md << "\n/ping p99 at fixed rate (ms):\n\n";
  h = head;
  h.insert(h.begin() + 1, "offered rps/route");
  md << header(h);
  for (int cost : costs) {
    config_scope s{profile, cost, "rate"};
    const measured_config* in = inline_config(cs, s);
    rep_stat base = in ? in->route("ping", &route_row_stats::p99) : rep_stat{};
    rep_stat offered =
        in ? in->stat([](const result_row& r) { return r.rate_per_route; }) : rep_stat{};
    std::vector<std::string> cells = {std::to_string(cost), cell(offered, 0), cell(base, 2)};
    std::optional<double> best;
    for (int n : sizes) {
      const measured_config* c = default_policy_config(cs, s, n);
      rep_stat p = c ? c->route("ping", &route_row_stats::p99) : rep_stat{};
      cells.push_back(cell(p, 2));
      if (p && (!best || p.median < *best)) best = p.median;
    }
    for (const auto& [pol, n] : others) {
      const measured_config* c = mode_config(cs, s, pol, n);
      cells.push_back(c ? cell(c->route("ping", &route_row_stats::p99), 2) + mark(*c) : "-");
    }
    md << row(cells);
    p99_wins[cost] = (base && best) ? std::optional<bool>(*best < base.median) : std::nullopt;
  }
  md << "\nCrossover (best pool size against inline):\n\n"
     << crossover(costs, rps_wins, "Total rps, saturating")
     << crossover(costs, p99_wins, "/ping p99, fixed rate") << "\n";
  for (const auto& ch : charts)
    if (ch.section == "sweep:" + profile) md << "![" << ch.title << "](" << ch.file << ")\n\n";
}

}  // namespace knit::bench::report_detail

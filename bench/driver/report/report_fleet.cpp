// The fleet section of report.md ("Behind HAProxy"): the server alone against the same
// configuration behind HAProxy with N instances, and the balancer's cost per request as the
// paired difference of CPU-us/req and /ping p99.
#include "driver/report/report_fleet.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "driver/report/report_cells.hpp"
#include "driver/run/numfmt.hpp"

namespace knit::bench::report_detail {
namespace {

using measure = std::function<std::optional<double>(const result_row&)>;

std::optional<double> ping_p99(const result_row& r) {
  auto it = r.routes.find("ping");
  if (it == r.routes.end()) return std::nullopt;
  return it->second.p99;
}

std::optional<double> cpu_per_req(const result_row& r) { return opt_d(r.cpu_us_per_req); }

// fleet - alone per repetition number (interleaved runs measure rep r of both close in
// time): median, min and max over the pairs.
rep_stat paired_difference(const measured_config& fleet, const measured_config& alone,
                           const measure& f) {
  std::map<int, double> base;
  for (const result_row* r : alone.reps)
    if (auto x = f(*r)) base[r->rep] = *x;
  std::vector<double> d;
  for (const result_row* r : fleet.reps)
    if (auto x = f(*r); x && base.count(r->rep)) d.push_back(*x - base[r->rep]);
  rep_stat s;
  if (d.empty()) return s;
  std::sort(d.begin(), d.end());
  s.n = static_cast<int>(d.size());
  s.min = d.front();
  s.max = d.back();
  s.median = d.size() % 2 ? d[d.size() / 2] : (d[d.size() / 2 - 1] + d[d.size() / 2]) / 2;
  return s;
}

// "+12 (+10–+14)": a signed difference with its spread over the pairs.
std::string signed_cell(const rep_stat& s, int decimals) {
  if (!s) return "—";
  auto sign = [&](double x) {
    std::string t = x >= 0 ? "+" : "";  // appended, not "+" + fixed(): GCC 12 warns falsely
    t += fixed(x, decimals);
    return t;
  };
  if (s.n == 1) return sign(s.median);
  return sign(s.median) + " (" + sign(s.min) + "–" + sign(s.max) + ")";
}

// The server alone that a fleet configuration is compared with: same scope, policy,
// threads and hosts, no balancer.
const measured_config* alone_of(const std::vector<measured_config>& cs, const measured_config& f) {
  for (const auto& c : cs)
    if (c.fleet == 0 && c.profile == f.profile && c.extra_cost_us == f.extra_cost_us &&
        c.mode == f.mode && c.policy == f.policy && c.threads == f.threads && c.hosts == f.hosts &&
        c.policy_label == f.policy_label)
      return &c;
  return nullptr;
}

std::string figures(const measured_config& c, const std::string& instances) {
  return row({c.label + mark(c), instances, cell(total(c), 0),
              cell(c.route("ping", &route_row_stats::p99), 2), cell(cores(c), 2),
              cell(cpu_us(c), 0)});
}

}  // namespace

std::string fleet_section(const std::vector<measured_config>& cs, const std::string& profile) {
  md_stream md;
  bool any = false;
  for (const char* mode : {"sat", "rate"}) {
    std::vector<const measured_config*> fleets;
    for (const auto& c : cs)
      if (c.fleet > 0 && c.profile == profile && !c.extra_cost_us && c.mode == mode)
        fleets.push_back(&c);
    if (fleets.empty()) continue;
    if (!any) {
      md << "## Behind HAProxy (cost profile " << (profile.empty() ? "not recorded" : profile)
         << ")\n\n"
         << "The same knit-server configuration alone and as N instances behind HAProxy "
            "(`deploy/fleet.sh run N`), under the same load through one port. *cores* and "
            "*CPU-us/req* of a fleet are the instances and HAProxy together (their process "
            "tree); the balancer's cost per request is the difference from the server alone, "
            "paired by repetition (median, min–max).\n\n";
      any = true;
    }
    md << "### " << (std::string(mode) == "sat" ? "Saturating" : "Fixed rate") << "\n\n";
    md << header({"configuration", "instances", "total rps", "/ping p99 ms", "cores", "CPU-us/req"},
                 {false, true, true, true, true, true});
    std::vector<const measured_config*> shown;
    for (const measured_config* f : fleets) {
      const measured_config* alone = alone_of(cs, *f);
      if (alone && std::find(shown.begin(), shown.end(), alone) == shown.end()) {
        md << figures(*alone, "alone");
        shown.push_back(alone);
      }
      md << figures(*f, std::to_string(f->fleet) + " + HAProxy");
    }
    md << "\n";
    md << header(
        {"configuration", "vs", "CPU-us/req added", "/ping p99 ms added", "total rps ratio"},
        {false, false, true, true, true});
    for (const measured_config* f : fleets) {
      const measured_config* alone = alone_of(cs, *f);
      if (!alone) continue;
      rep_stat rps = paired_difference(*f, *alone, [](const result_row& r) {
        return std::optional<double>(static_cast<double>(r.total_rps));
      });
      rep_stat base = alone->stat([](const result_row& r) {
        return std::optional<double>(static_cast<double>(r.total_rps));
      });
      std::string ratio = rps && base && base.median > 0
                              ? fixed((base.median + rps.median) / base.median, 2) + "×"
                              : "—";
      md << row({f->label + mark(*f), alone->label + " alone",
                 signed_cell(paired_difference(*f, *alone, cpu_per_req), 0),
                 signed_cell(paired_difference(*f, *alone, ping_p99), 2), ratio});
    }
    md << "\n";
  }
  return md.str();
}

}  // namespace knit::bench::report_detail

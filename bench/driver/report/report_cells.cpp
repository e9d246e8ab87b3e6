// The cells and row selections every section of report.md shares: per-configuration
// medians, labels with their marks, markdown rows, and the rows of the headline tables.
#include "driver/report/report_cells.hpp"

#include <algorithm>

#include "driver/report/md_table.hpp"
#include "driver/report/peer_report.hpp"

namespace knit::bench::report_detail {

std::optional<double> opt_d(const std::optional<long long>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

rep_stat idle(const measured_config& c) {
  return c.stat([](const result_row& r) { return std::optional<double>(r.idle_cores); });
}
rep_stat cores(const measured_config& c) {
  return c.stat([](const result_row& r) { return std::optional<double>(r.cores); });
}
rep_stat total(const measured_config& c) {
  return c.stat(
      [](const result_row& r) { return std::optional<double>(static_cast<double>(r.total_rps)); });
}
rep_stat rps_core(const measured_config& c) {
  return c.stat([](const result_row& r) { return opt_d(r.rps_per_core); });
}
rep_stat cpu_us(const measured_config& c) {
  return c.stat([](const result_row& r) { return opt_d(r.cpu_us_per_req); });
}

// Next to every figure that rests on a window the machine was busy elsewhere during
// (result_row::foreign_flagged), explained by foreign_load_note().
bool any_foreign_flagged(const measured_config& c) {
  for (const result_row* r : c.reps)
    if (r->foreign_flagged.value_or(false)) return true;
  return false;
}
std::string mark(const measured_config& c) { return any_foreign_flagged(c) ? kForeignMark : ""; }
// A peer loaded on some routes only says so wherever its label appears: its totals and
// server cores are not the same work as a row that served all three.
std::string label_of(const measured_config& c) { return c.label + served_note(c) + mark(c); }

std::string row(const std::vector<std::string>& cells) { return md_row(cells); }
std::string header(const std::vector<std::string>& cells, const std::vector<bool>& right) {
  return md_header(cells, right);
}

namespace {

// Order of policies inside one pool size in the full CPU picture (the reference tables' order).
int policy_rank(const measured_config& c) {
  switch (c.policy) {
    case config_kind::old_default: return 0;
    case config_kind::flat50: return 1;
    case config_kind::no_spin: return 2;
    case config_kind::default_policy: return 3;
    default: return 4;
  }
}

}  // namespace

std::vector<const measured_config*> scoped(const std::vector<measured_config>& cs,
                                           const config_scope& s, bool pooled_only) {
  std::vector<const measured_config*> v;
  for (const auto& c : cs)
    if (in_scope(c, s) && (!pooled_only || is_pool_policy(c.policy))) v.push_back(&c);
  std::stable_sort(v.begin(), v.end(), [](const measured_config* a, const measured_config* b) {
    if (a->threads != b->threads) return a->threads < b->threads;
    return policy_rank(*a) < policy_rank(*b);
  });
  return v;
}

// The rows of sections A and B: inline, the default policy at each pool size, knit's auto
// mode, then the peers (asio, multi, external servers), each by thread count.
std::vector<const measured_config*> headline(const std::vector<measured_config>& cs,
                                             const config_scope& s) {
  std::vector<const measured_config*> v;
  if (auto* c = inline_config(cs, s)) v.push_back(c);
  for (int n : pool_sizes(cs, s))
    if (auto* c = default_policy_config(cs, s, n)) v.push_back(c);
  for (config_kind p : {config_kind::auto_mode, config_kind::asio, config_kind::multi}) {
    std::vector<const measured_config*> of;
    for (const auto& c : cs)
      if (in_scope(c, s) && c.policy == p) of.push_back(&c);
    std::stable_sort(of.begin(), of.end(), [](const measured_config* a, const measured_config* b) {
      return a->threads < b->threads;
    });
    v.insert(v.end(), of.begin(), of.end());
  }
  for (const measured_config* c : external_peers(cs, s)) v.push_back(c);
  return v;
}

std::string lat_pair(const measured_config& c, const std::string& route) {
  rep_stat p50 = c.route(route, &route_row_stats::p50), p99 = c.route(route, &route_row_stats::p99);
  return cell(p50, 2) + " / " + cell(p99, 2);
}

}  // namespace knit::bench::report_detail

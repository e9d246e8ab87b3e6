// The pool counters section of report.md: counter deltas over the window per pooled call.
#include "driver/report/report_counters.hpp"

#include <set>

#include "driver/run/numfmt.hpp"

namespace knit::bench::report_detail {

void pool_counter_section(md_stream& md, const std::vector<measured_config>& cs,
                          const std::string& profile) {
  std::vector<const measured_config*> v;
  std::set<std::string> keys;
  for (const auto& c : cs) {
    if (c.profile != profile || c.extra_cost_us || c.policy == config_kind::inline_loop) continue;
    bool has = false;
    for (const result_row* r : c.reps)
      if (!r->pool_per_call.empty()) {
        has = true;
        for (const auto& [k, x] : r->pool_per_call) keys.insert(k);
      }
    if (has) v.push_back(&c);
  }
  md << "### Pool counters\n\n";
  if (v.empty()) {
    md << "No pool counters in these rows (inline only, reference benchmark rows, or a server "
          "without SIGUSR1 stats).\n\n";
    return;
  }
  // Stuck calls are rare events: per call they would print as 0.000, so they get their own
  // columns as counts over the window (retired_running: threads still in a stuck task at
  // its end), shown only when some row has one.
  std::vector<std::string> stuck_cols;
  std::vector<std::string> zero;
  for (const char* k : {"calls_stuck", "workers_replaced", "retired_running"}) {
    keys.erase(k);
    bool seen = false;
    bool nonzero = false;
    for (const measured_config* c : v)
      for (const result_row* r : c->reps)
        if (auto it = r->pool_counters.find(k); it != r->pool_counters.end()) {
          seen = true;
          nonzero = nonzero || it->second != 0;
        }
    if (nonzero) stuck_cols.push_back(k);
    else if (seen) zero.push_back(k);
  }
  // The counters that explain a pool's cost first; anything new the server adds follows.
  std::vector<std::string> cols;
  for (const char* k :
       {"host_wakes", "completion_batches", "completion_signals", "peer_wakes", "wakes_doorbell",
        "wakes_timeout", "parks", "spin_hits", "calls_stolen", "calls_run", "calls_completed"})
    if (keys.erase(k)) cols.push_back(k);
  for (const auto& k : keys) cols.push_back(k);
  // Counters that stayed at zero everywhere (rejections, timeouts...) only widen the table.
  std::erase_if(cols, [&](const std::string& k) {
    for (const measured_config* c : v)
      for (const result_row* r : c->reps)
        if (auto it = r->pool_per_call.find(k); it != r->pool_per_call.end() && it->second != 0)
          return false;
    zero.push_back(k);
    return true;
  });
  md << "Counter deltas over the measured window, divided by pooled calls (`calls_submitted`). "
        "Full deltas are in each row's `pool_counters`.";
  if (!stuck_cols.empty()) {
    md << " Stuck calls (`KNIT_STUCK_MS`) and the workers that replaced them are counts over the "
          "window, not per call; `retired_running` is the number of threads still in a stuck "
          "task at its end.";
  }
  if (!zero.empty()) {
    md << " Zero in every row, so not shown:";
    for (size_t i = 0; i < zero.size(); ++i) md << (i ? ", " : " ") << "`" << zero[i] << "`";
    md << ".";
  }
  md << "\n\n";
  std::vector<std::string> head = {"config", "policy", "mode", "pooled calls"};
  for (const auto& k : cols) head.push_back(k + "/call");
  for (const auto& k : stuck_cols) head.push_back(k);
  md << header(head);
  for (const measured_config* c : v) {
    std::vector<std::string> cells = {
        label_of(*c), c->policy_label, c->mode,
        cell(c->stat([](const result_row& r) -> std::optional<double> {
          auto it = r.pool_counters.find("calls_submitted");
          if (it == r.pool_counters.end()) return std::nullopt;
          return it->second;
        }),
             0)};
    for (const auto& k : cols)
      cells.push_back(cell(c->stat([&](const result_row& r) -> std::optional<double> {
        auto it = r.pool_per_call.find(k);
        if (it == r.pool_per_call.end()) return std::nullopt;
        return it->second;
      }),
                           3));
    for (const auto& k : stuck_cols)
      cells.push_back(cell(c->stat([&](const result_row& r) -> std::optional<double> {
        auto it = r.pool_counters.find(k);
        if (it == r.pool_counters.end()) return std::nullopt;
        return it->second;
      }),
                           0));
    md << row(cells);
  }
  md << "\n";
}

}  // namespace knit::bench::report_detail

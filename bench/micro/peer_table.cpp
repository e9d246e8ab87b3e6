#include "peer_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace knit_bench {

const std::vector<peer_metric_spec>& peer_metric_specs() {
  static const std::vector<peer_metric_spec> specs = {
      {"round_trip_back_to_back", "p50_us", "µs p50", false},
      {"round_trip_after_300us_gap", "p50_us", "µs p50", false},
      {"steady_stream_host_cpu", "host_cpu_us_per_call", "host CPU-µs/call", false},
      {"burst_64_in_flight", "calls_per_s", "calls/s", true},
      // Idle readings here (2 vCPUs, every runtime asleep, each thread by its own clock)
      // are 0-0.25 millicores.
      {"idle_cpu_after_work", "idle_cores", "millicores", false, 5, 1000},
  };
  return specs;
}

namespace {

const peer_metric_spec* spec_for(const std::string& metric) {
  for (const auto& s : peer_metric_specs())
    if (metric == s.metric) return &s;
  return nullptr;
}

std::string format_figure(double v) {
  char buf[32];
  if (v >= 1e6) std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
  else if (v >= 1e4) std::snprintf(buf, sizeof buf, "%.0fk", v / 1e3);
  else if (v >= 100) std::snprintf(buf, sizeof buf, "%.1f", v);
  else std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// "1.39 (1.20–1.52)": the median, with min–max when there was more than one repetition.
std::string format_cell(const peer_figures& f) {
  std::string s = format_figure(f.median());
  if (f.values.size() > 1) {
    const auto [lo, hi] = std::minmax_element(f.values.begin(), f.values.end());
    s.append(" (").append(format_figure(*lo)).append("–").append(format_figure(*hi)).append(")");
  }
  return s;
}

}  // namespace

double peer_figures::median() const {
  if (values.empty()) return 0;
  std::vector<double> v = values;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double knit_ratio_to_best_peer(const peer_metric_row& row, const peer_metric_spec& spec) {
  const bool higher_is_better = spec.higher_is_better;
  double knit = -1, best = -1;
  for (const auto& f : row.figures) {
    const double v = f.median();
    if (f.runtime == "knit") {
      knit = v;
    } else if (best < 0 || (higher_is_better ? v > best : v < best)) {
      best = v;
    }
  }
  if (knit < 0 || best < 0) return 0;
  if (knit < spec.noise_floor && best < spec.noise_floor) return 1;
  if (higher_is_better) return best > 0 ? knit / best : 0;
  if (knit == 0) return best == 0 ? 1 : INFINITY;  // idle CPU: 0 vs 0 is a tie
  return best / knit;
}

std::string render_peer_table(const std::vector<peer_metric_row>& rows) {
  std::vector<std::string> runtimes;
  for (const auto& row : rows)
    for (const auto& f : row.figures)
      if (std::find(runtimes.begin(), runtimes.end(), f.runtime) == runtimes.end())
        runtimes.push_back(f.runtime);
  std::string out = "| metric | unit |";
  for (const auto& r : runtimes) out.append(" ").append(r).append(" |");
  out += " knit vs best peer |\n|---|---|";
  for (std::size_t i = 0; i < runtimes.size(); ++i) out += "---:|";
  out += "---:|\n";
  for (const auto& row : rows) {
    const peer_metric_spec* spec = spec_for(row.metric);
    out.append("| ").append(row.metric).append(" | ").append(spec ? spec->unit : "").append(" |");
    for (const auto& r : runtimes) {
      auto it = std::find_if(row.figures.begin(), row.figures.end(),
                             [&](const auto& f) { return f.runtime == r; });
      out.append(" ")
          .append(it == row.figures.end() ? std::string("-") : format_cell(*it))
          .append(" |");
    }
    const double ratio = spec ? knit_ratio_to_best_peer(row, *spec) : 0;
    char buf[32];
    if (ratio == 0) std::snprintf(buf, sizeof buf, "-");
    else if (std::isinf(ratio)) std::snprintf(buf, sizeof buf, "knit 0");
    else std::snprintf(buf, sizeof buf, "%.2fx", ratio);
    out.append(" ").append(buf).append(" |\n");
  }
  out +=
      "\nEach cell: median (min–max) of the interleaved repetitions.\n"
      "knit vs best peer: how many times better knit's median is than the best peer's (> 1: knit "
      "wins;\n"
      "lower is better for time and CPU, higher for calls/s; 1.00x where both are under the noise "
      "floor).\n";
  return out;
}

void peer_table_reporter::ReportRuns(const std::vector<Run>& runs) {
  for (const Run& run : runs) {
    if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
    // peer/<metric>/<runtime>[/options added by the library]
    const std::string name = run.benchmark_name();
    if (name.rfind("peer/", 0) != 0) continue;
    const auto a = name.find('/', 5);
    if (a == std::string::npos) continue;
    const auto b = name.find('/', a + 1);
    const std::string metric = name.substr(5, a - 5);
    const std::string runtime =
        name.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1);
    const peer_metric_spec* spec = spec_for(metric);
    if (!spec) continue;
    const auto counter = run.counters.find(spec->counter);
    if (counter == run.counters.end()) continue;
    auto row =
        std::find_if(rows_.begin(), rows_.end(), [&](const auto& r) { return r.metric == metric; });
    if (row == rows_.end()) row = rows_.insert(rows_.end(), peer_metric_row{metric, {}});
    auto figures = std::find_if(row->figures.begin(), row->figures.end(),
                                [&](const auto& f) { return f.runtime == runtime; });
    if (figures == row->figures.end())
      figures = row->figures.insert(row->figures.end(), peer_figures{runtime, {}});
    figures->values.push_back(counter->second.value * spec->scale);
  }
  ConsoleReporter::ReportRuns(runs);
}

}  // namespace knit_bench

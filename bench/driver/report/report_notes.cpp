// The notes of report.md: foreign load on the machine, rows whose server ran another
// mode or another number of hosts, and the change / ratio texts the tables print.
#include "driver/report/report_notes.hpp"

#include <algorithm>

#include "driver/report/report_cells.hpp"
#include "driver/run/numfmt.hpp"

namespace knit::bench {

using report_detail::kForeignMark;
using report_detail::md_stream;

std::string pct_change(double base, double value) {
  if (base == 0) return "-";
  long long p = py_round_int((value / base - 1.0) * 100.0);
  std::string s = p >= 0 ? "+" : "";
  s += std::to_string(p);
  s += '%';
  return s;
}

std::string ratio_text(double old_value, double new_value, bool higher_is_better) {
  if (old_value <= 0 || new_value <= 0) return "-";
  auto fmt = [](double x) { return x >= 10 ? fixed(x, 0) : fixed(x, 1); };
  if (higher_is_better) {
    double x = new_value / old_value;
    return x >= 1 ? fmt(x) + "x" : fmt(1 / x) + "x less";
  }
  double x = old_value / new_value;
  return x >= 1 ? fmt(x) + "x less" : fmt(1 / x) + "x more";
}

std::string foreign_load_note(const std::vector<result_row>& rows) {
  int measured = 0, reran = 0;
  double worst = 0;
  std::vector<const result_row*> flagged;
  for (const result_row& r : rows) {
    if (!r.foreign_cores) continue;
    ++measured;
    worst = std::max(worst, *r.foreign_cores);
    if (r.foreign_reruns.value_or(0) > 0) ++reran;
    if (r.foreign_flagged.value_or(false)) flagged.push_back(&r);
  }
  if (measured == 0) return "";
  md_stream md;
  md << "Foreign load: each window recorded the CPU the machine spent outside the server, the load "
        "generator and "
        "the driver (`foreign_cores`, from `/proc/stat`); at most "
     << fixed(worst, 2) << " cores over " << measured << " window(s)";
  if (reran)
    md << "; " << reran << " case(s) were measured again because another job was using the machine";
  md << ".";
  if (flagged.empty()) {
    md << " No window stayed over the limit.\n\n";
    return md.str();
  }
  md << "\n\n>" << kForeignMark << " " << flagged.size()
     << " window(s) stayed over the limit after their reruns; figures resting on them are marked"
     << kForeignMark << " and may be low: ";
  for (size_t i = 0; i < flagged.size(); ++i) {
    const result_row& r = *flagged[i];
    md << (i ? "; " : "") << r.tag << " " << r.mode;
    if (r.extra_cost_us) md << " extra " << *r.extra_cost_us << "us";
    md << " rep " << r.rep + 1 << " (" << fixed(*r.foreign_cores, 2) << " cores foreign)";
  }
  md << ".\n\n";
  return md.str();
}

std::string mode_mismatch_note(const std::vector<result_row>& rows) {
  std::vector<std::string> seen;
  for (const result_row& r : rows) {
    if (!r.reported_mode || *r.reported_mode == r.server_mode) continue;
    std::string what = "`" + r.tag + "` " + r.mode + " asked for " + r.server_mode +
                       ", knit-stats said " + *r.reported_mode;
    if (std::find(seen.begin(), seen.end(), what) == seen.end()) seen.push_back(what);
  }
  if (seen.empty()) return "";
  std::string s =
      "> Warning: the server ran another mode than some rows are named for, so those rows measure "
      "the "
      "reported mode: ";
  for (size_t i = 0; i < seen.size(); ++i) s += (i ? "; " : "") + seen[i];
  return s + ".\n\n";
}

std::string hosts_mismatch_note(const std::vector<result_row>& rows) {
  std::vector<std::string> seen;
  for (const result_row& r : rows) {
    // Only knit-server rows: a peer prints no knit-stats, so it reported nothing.
    if (!r.reported_mode || r.reported_hosts.value_or(1) == r.hosts) continue;
    std::string what = "`" + r.tag + "` " + r.mode + " asked for " + std::to_string(r.hosts) +
                       ", knit-stats listed " + std::to_string(r.reported_hosts.value_or(1));
    if (std::find(seen.begin(), seen.end(), what) == seen.end()) seen.push_back(what);
  }
  if (seen.empty()) return "";
  std::string s =
      "> Warning: the server ran another number of hosts (event loops) than some rows are "
      "named for, so those rows measure what it ran: ";
  for (size_t i = 0; i < seen.size(); ++i) s += (i ? "; " : "") + seen[i];
  return s + ".\n\n";
}

}  // namespace knit::bench

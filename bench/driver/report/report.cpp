// report.md from rows.jsonl alone (plus meta.json when present): the reference tables
// A, B, C, the peers, pool counters, the hosts sweep and the cost sweep, one table set per
// cost profile.
#include "driver/report/report.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "driver/report/configs.hpp"
#include "driver/report/md_table.hpp"
#include "driver/report/peer_report.hpp"
#include "driver/report/report_cells.hpp"
#include "driver/report/report_counters.hpp"
#include "driver/report/report_fleet.hpp"
#include "driver/report/report_hosts.hpp"
#include "driver/report/report_reference_tables.hpp"
#include "driver/report/report_sweep.hpp"
#include "driver/run/json_write.hpp"
#include "driver/run/numfmt.hpp"

namespace knit::bench {
namespace {

namespace json = boost::json;
using namespace report_detail;

std::string str_of(const json::object* o, const char* key) {
  if (!o) return "";
  const json::value* v = o->if_contains(key);
  if (!v) return "";
  if (v->is_string()) return std::string(v->get_string());
  if (v->is_number()) return shortest(v->to_number<double>());
  return "";
}

const json::object* obj_of(const json::object* o, const char* key) {
  if (!o) return nullptr;
  const json::value* v = o->if_contains(key);
  return v && v->is_object() ? &v->get_object() : nullptr;
}

// `text`, built by appending: GCC 12 misreads "`" + std::string as an overlapping copy
// (-Wrestrict) once the strings are inlined here.
std::string code_span(const std::string& text) {
  std::string s = "`";
  s += text;
  s += '`';
  return s;
}

void run_header(md_stream& md, const json::object* run, size_t index, size_t count) {
  if (count > 1) md << "Run " << index + 1 << " of " << count << ":\n\n";
  const json::object* machine = obj_of(run, "machine");
  const json::object* layout = obj_of(run, "cpu_layout");
  md << header({"", ""});
  md << row({"Machine", str_of(machine, "model") + ", " + str_of(machine, "cpus") + " CPUs, " +
                            str_of(machine, "kernel")});
  md << row(
      {"Date", str_of(run, "started") +
                   (str_of(run, "finished").empty() ? "" : " to " + str_of(run, "finished"))});
  md << row({"Command", code_span(str_of(run, "command"))});
  md << row({"Plan", str_of(run, "plan") + ", " + str_of(run, "cases") + " cases x " +
                         str_of(run, "repeat") + " repetition(s), interleaved"});
  md << row({"Durations", "idle " + str_of(run, "idle_s") + " s, warm-up " +
                              str_of(run, "warmup_s") + " s, window " + str_of(run, "window_s") +
                              " s"});
  md << row({"Load", "closed loop " + str_of(run, "conns") + " connections/route; fixed rate = " +
                         fixed(std::stod(str_of(run, "rate_fraction").empty()
                                             ? "0.7"
                                             : str_of(run, "rate_fraction")) *
                                   100,
                               0) +
                         "% of the inline saturating total (per route: that / 3)"});
  auto cpus = [&](const char* k) {
    std::string v = str_of(layout, k);
    return v.empty() ? std::string("unpinned") : v;
  };
  md << row({"CPU layout",
             "server CPUs " + cpus("server_cpus") + ", generator CPUs " + cpus("gen_cpus")});
  md << row({"Binaries", code_span(str_of(run, "server")) + ", " + code_span(str_of(run, "load"))});
  md << row({"Status", str_of(run, "status")});
  md << "\n";
}

}  // namespace

std::string render_markdown(const std::vector<result_row>& rows, const json::object* meta,
                            const std::vector<chart_ref>& charts,
                            const std::vector<std::string>& warnings) {
  md_stream md;
  auto cs = group_configs(rows);
  md << "# knit-bench report\n\n";
  md << "Rendered from `rows.jsonl` alone (" << rows.size() << " rows";
  const json::array* runs = nullptr;
  if (meta)
    if (auto* r = meta->if_contains("runs"); r && r->is_array()) runs = &r->get_array();
  md << (runs ? ", plus `meta.json` for the run context" : "") << "); nothing was re-measured.\n\n";
  if (runs && !runs->empty()) {
    for (size_t i = 0; i < runs->size(); ++i)
      run_header(md, (*runs)[i].is_object() ? &(*runs)[i].get_object() : nullptr, i, runs->size());
  } else {
    md << "No `meta.json` beside the rows: machine, date, command line and CPU layout are unknown.";
    rep_stat w, id;
    for (const auto& c : cs) {
      if (!w) w = c.stat([](const result_row& r) { return r.window_s; });
      if (!id) id = c.stat([](const result_row& r) { return r.idle_s; });
    }
    if (w || id)
      md << " Durations from the rows: idle " << (id ? shortest(id.median) : "?") << " s, window "
         << (w ? shortest(w.median) : "?") << " s.";
    md << "\n\n";
  }
  auto prof = profiles(cs, false);
  auto sweep_prof = profiles(cs, true);
  std::string plist;
  for (const auto& p : prof)
    plist += (plist.empty() ? "" : ", ") + (p.empty() ? std::string("not recorded") : p);
  for (const auto& p : sweep_prof)
    if (std::find(prof.begin(), prof.end(), p) == prof.end())
      plist += (plist.empty() ? "" : ", ") + (p.empty() ? std::string("not recorded") : p) +
               " (cost sweep)";
  md << "Cost profile(s): " << (plist.empty() ? "none" : plist) << ".\n\n";

  bool repeated = false, reference_rows = false;
  for (const auto& c : cs) {
    if (c.reps.size() > 1) repeated = true;
    for (const result_row* r : c.reps)
      if (is_reference_schema(*r)) reference_rows = true;
  }
  md << "Columns: *idle cores* is server CPU with no load offered; *server cores* is server "
        "CPU-seconds over the "
        "window divided by its length; *CPU-us/req* is server CPU per request served. Latencies "
        "are in ms. "
        "The *default policy* is the library default (spin 50us at one worker, none above); the "
        "*old default* spins "
        "N*50us and parks 1ms.\n\n";
  if (repeated) md << "Repeated configurations show the median, with min–max in parentheses.\n\n";
  if (reference_rows)
    md << "Some rows use the reference benchmark's schema (see `docs/reference-server.md`): tag "
          "`only` is the inline server; spin `default` is the old default "
          "(N*50us, park 1ms), which is also the default policy at N=1; spin `0` is the default "
          "policy at N>=2.\n\n";
  for (const auto& w : warnings) md << "> Warning: " << w << "\n\n";
  md << mode_mismatch_note(rows);
  md << hosts_mismatch_note(rows);
  md << foreign_load_note(rows);

  for (const auto& p : prof) {
    // The tables below are over one host; a profile measured only with more is in the
    // "Many event loops" section alone.
    const std::vector<int> hosts = host_counts(cs, p);
    if (std::find(hosts.begin(), hosts.end(), 1) == hosts.end()) continue;
    md << "## Cost profile: " << (p.empty() ? "not recorded (reference benchmark rows)" : p)
       << "\n\n";
    config_scope sat{p, std::nullopt, "sat"}, rate{p, std::nullopt, "rate"};
    section_a(md, cs, sat);
    section_b(md, cs, rate);
    md << peers_section(cs, sat, rate);
    section_c(md, cs, sat, rate);
    pool_counter_section(md, cs, p);
    bool any = false;
    for (const auto& ch : charts)
      if (ch.section == "profile:" + p) {
        if (!any) md << "### Charts\n\n";
        any = true;
        md << "![" << ch.title << "](" << ch.file << ")\n\n";
      }
  }
  for (const auto& p : prof) md << hosts_section(cs, p, charts);
  for (const auto& p : prof) md << fleet_section(cs, p);
  for (const auto& p : sweep_prof) sweep_section(md, cs, p, charts);
  return md.str();
}

std::string write_report(const std::string& rows_path, bool with_charts,
                         std::vector<std::string>* warnings_out) {
  namespace fs = std::filesystem;
  auto rows = read_rows_file(rows_path);
  fs::path dir = fs::absolute(fs::path(rows_path)).parent_path();
  std::optional<json::value> meta;
  std::vector<std::string> warnings;
  if (fs::exists(dir / "meta.json")) {
    std::ifstream in(dir / "meta.json");
    std::stringstream ss;
    ss << in.rdbuf();
    try {
      meta = parse_json(ss.str(), "meta.json");
      if (!meta->is_object()) meta.reset();
    } catch (const std::exception& e) {
      warnings.push_back(e.what());
    }
  }
  chart_set charts;
  if (with_charts) {
    charts = render_charts(group_configs(rows), dir.string());
    warnings.insert(warnings.end(), charts.warnings.begin(), charts.warnings.end());
  }
  std::string md =
      render_markdown(rows, meta ? &meta->get_object() : nullptr, charts.charts, warnings);
  std::string out = (dir / "report.md").string();
  std::ofstream f(out, std::ios::trunc);
  f << md;
  if (!f) throw std::runtime_error("cannot write " + out);
  if (warnings_out) *warnings_out = warnings;
  return out;
}

}  // namespace knit::bench

// The report's "knit vs the peers": each knit configuration against the best in-process peer
// with as many route threads, as a ratio with its spread over repetitions; external peers
// apart, as their own figures next to knit's best.
#include "driver/report/peer_report.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "driver/report/md_table.hpp"
#include "driver/run/numfmt.hpp"

namespace knit::bench {
namespace {

const char* const kForeignMark = " \u26a0";

bool flagged(const measured_config& c) {
  return std::any_of(c.reps.begin(), c.reps.end(),
                     [](const result_row* r) { return r->foreign_flagged.value_or(false); });
}

bool serves(const measured_config& c, const peer_metric& m) {
  auto routes = routes_of(c);
  if (m.needs_all_routes) return routes.size() == 3;
  return std::find(routes.begin(), routes.end(), "ping") != routes.end();
}

// A knit configuration as it appears in both load modes.
struct knit_slot {
  std::string label;
  std::function<const measured_config*(const config_scope&)> find;
};

std::vector<knit_slot> knit_slots(const std::vector<measured_config>& cs, const config_scope& sat,
                                  const config_scope& rate) {
  std::vector<knit_slot> slots;
  slots.push_back({"inline", [&cs](const config_scope& s) { return inline_config(cs, s); }});
  std::vector<int> sizes = pool_sizes(cs, sat);
  for (int n : pool_sizes(cs, rate)) sizes.push_back(n);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  for (int n : sizes)
    slots.push_back({"threads: " + std::to_string(n),
                     [&cs, n](const config_scope& s) { return default_policy_config(cs, s, n); }});
  std::vector<int> autos;
  for (const auto& c : cs)
    if ((in_scope(c, sat) || in_scope(c, rate)) && c.policy == config_kind::auto_mode)
      autos.push_back(c.threads);
  std::sort(autos.begin(), autos.end());
  autos.erase(std::unique(autos.begin(), autos.end()), autos.end());
  for (int n : autos)
    slots.push_back({"auto: " + std::to_string(n), [&cs, n](const config_scope& s) {
                       return mode_config(cs, s, config_kind::auto_mode, n);
                     }});
  return slots;
}

// The alternatives a C++ user would write in the same process model: asio and multi.
bool is_in_process_peer(config_kind p) { return p == config_kind::asio || p == config_kind::multi; }

// In-process peers in scope that `knit` is compared with on `m`: asio and multi with as
// many route threads; each must have served the routes the measure needs.
std::vector<const measured_config*> candidates(const std::vector<measured_config>& cs,
                                               const config_scope& s, const measured_config& knit,
                                               const peer_metric& m) {
  std::vector<const measured_config*> v;
  for (const auto& c : cs) {
    // External servers are a reference, reported apart (external_table), not a C++ user's
    // alternative.
    if (!in_scope(c, s) || !is_in_process_peer(c.policy) || !serves(c, m)) continue;
    if (m.needs_rate_met && !met_rate(c)) continue;  // it did less work: its cores would look good
    auto rt = route_threads(c);
    if (rt && rt != route_threads(knit)) continue;
    v.push_back(&c);
  }
  return v;
}

struct versus_cell {
  std::string text = "-";
  bool peer_wins = false;
  std::string best;
  rep_stat ratio;
  double knit_median = 0, best_median = 0;  // the figures behind the ratio
};

versus_cell compare(const std::vector<measured_config>& cs, const config_scope& s,
                    const measured_config* knit, const peer_metric& m) {
  versus_cell out;
  if (!knit || !serves(*knit, m)) return out;
  if (m.needs_rate_met && !met_rate(*knit)) {
    out.text = "- (rate not achieved)";
    return out;
  }
  const measured_config* best = nullptr;
  rep_stat best_v;
  for (const measured_config* p : candidates(cs, s, *knit, m)) {
    rep_stat v = p->stat(m.value);
    if (!v) continue;
    if (!best || (m.higher_is_better ? v.median > best_v.median : v.median < best_v.median)) {
      best = p;
      best_v = v;
    }
  }
  if (!best) return out;
  out.ratio = paired_ratio(*knit, *best, m);
  if (!out.ratio) return out;
  out.best = best->label + served_note(*best);
  out.knit_median = knit->stat(m.value).median;
  out.best_median = best_v.median;
  out.peer_wins = out.ratio.median < 1.0;
  out.text = ratio_cell(out.ratio) + " vs " + out.best + (out.peer_wins ? ", peer wins" : "") +
             (flagged(*knit) || flagged(*best) ? kForeignMark : "");
  return out;
}

}  // namespace

std::optional<int> route_threads(const measured_config& c) {
  switch (c.policy) {
    case config_kind::inline_loop: return c.hosts;
    case config_kind::multi: return c.threads;
    case config_kind::peer: return std::nullopt;
    default: return c.threads + c.hosts;
  }
}

bool met_rate(const measured_config& c) {
  for (const result_row* r : c.reps)
    for (const auto& [name, rs] : r->routes)
      if (rs.rate_met && !*rs.rate_met) return false;
  return true;
}

std::string served_note(const measured_config& c) {
  auto routes = routes_of(c);
  if (routes.size() >= 3 || routes.empty()) return "";
  std::string s = " (";
  for (size_t i = 0; i < routes.size(); ++i) s += (i ? ", /" : "/") + routes[i];
  return s + " only)";
}

namespace {

std::optional<double> ping_p99(const result_row& r) {
  auto it = r.routes.find("ping");
  if (it == r.routes.end()) return std::nullopt;
  return it->second.p99;
}

std::optional<double> ping_rps(const result_row& r) {
  auto it = r.routes.find("ping");
  if (it == r.routes.end()) return std::nullopt;
  return it->second.rps;
}

std::optional<double> cpu_us_per_req(const result_row& r) {
  if (!r.cpu_us_per_req) return std::nullopt;
  return static_cast<double>(*r.cpu_us_per_req);
}

}  // namespace

const std::vector<peer_metric>& peer_metrics() {
  static const std::vector<peer_metric> metrics = {
      {"total rps, saturating", "sat", true, true, false,
       [](const result_row& r) -> std::optional<double> {
         return static_cast<double>(r.total_rps);
       }},
      {"/ping p99, saturating", "sat", false, false, false, ping_p99},
      {"/ping p99, fixed rate", "rate", false, false, true, ping_p99},
      {"server cores, fixed rate", "rate", false, true, true,
       [](const result_row& r) -> std::optional<double> { return r.cores; }},
      {"CPU-us/req, fixed rate", "rate", false, true, true, cpu_us_per_req},
  };
  return metrics;
}

rep_stat paired_ratio(const measured_config& knit, const measured_config& peer,
                      const peer_metric& m) {
  std::vector<double> ratios;
  for (const result_row* k : knit.reps) {
    auto kv = m.value(*k);
    if (!kv || !(*kv > 0)) continue;
    for (const result_row* p : peer.reps) {
      if (p->rep != k->rep) continue;
      auto pv = m.value(*p);
      if (!pv || !(*pv > 0)) continue;
      ratios.push_back(m.higher_is_better ? *kv / *pv : *pv / *kv);
      break;
    }
  }
  rep_stat s;
  if (ratios.empty()) return s;
  std::sort(ratios.begin(), ratios.end());
  s.n = static_cast<int>(ratios.size());
  s.min = ratios.front();
  s.max = ratios.back();
  const size_t h = ratios.size() / 2;
  s.median = ratios.size() % 2 ? ratios[h] : (ratios[h - 1] + ratios[h]) / 2;
  return s;
}

std::string ratio_cell(const rep_stat& r) {
  if (!r) return "-";
  std::string m = fixed(r.median, 2) + "\u00d7";
  std::string lo = fixed(r.min, 2), hi = fixed(r.max, 2);
  if (r.n == 1 || lo == hi) return m;
  return m + " (" + lo + "\u2013" + hi + ")";
}

namespace {

// An external server's own figure, printed with its unit's decimals.
struct external_measure {
  peer_metric metric;
  int decimals;
};

const std::vector<external_measure>& external_measures() {
  // needs_all_routes false: an external peer may serve /ping alone; these are its own figures
  // on the routes it served, next to knit's, not a ratio of the same work.
  static const std::vector<external_measure> measures = {
      {{"/ping rps, saturating", "sat", true, false, false, ping_rps}, 0},
      {{"/ping p99 ms, saturating", "sat", false, false, false, ping_p99}, 2},
      {{"/ping p99 ms, fixed rate", "rate", false, false, true, ping_p99}, 2},
      {{"CPU-us/req, fixed rate", "rate", false, false, true, cpu_us_per_req}, 0},
  };
  return measures;
}

// knit's configuration with the best median on `m` (each knit row of the main table).
const measured_config* knit_best(const std::vector<knit_slot>& slots, const config_scope& s,
                                 const peer_metric& m) {
  const measured_config* best = nullptr;
  rep_stat best_v;
  for (const auto& slot : slots) {
    const measured_config* k = slot.find(s);
    if (!k || !serves(*k, m) || (m.needs_rate_met && !met_rate(*k))) continue;
    rep_stat v = k->stat(m.value);
    if (!v) continue;
    if (!best || (m.higher_is_better ? v.median > best_v.median : v.median < best_v.median)) {
      best = k;
      best_v = v;
    }
  }
  return best;
}

std::vector<const measured_config*> external_peers(const std::vector<measured_config>& cs,
                                                   const config_scope& sat,
                                                   const config_scope& rate) {
  std::vector<const measured_config*> ext;
  for (const auto& c : cs)
    if ((in_scope(c, sat) || in_scope(c, rate)) && c.policy == config_kind::peer &&
        std::none_of(ext.begin(), ext.end(),
                     [&](const measured_config* e) { return e->label == c.label; }))
      ext.push_back(&c);
  return ext;
}

const measured_config* external_in(const std::vector<measured_config>& cs, const config_scope& s,
                                   const std::string& label) {
  for (const auto& c : cs)
    if (in_scope(c, s) && c.policy == config_kind::peer && c.label == label) return &c;
  return nullptr;
}

// Each external peer's figures next to knit's best row per measure, and one line per peer
// with knit's ratio to it (same direction as the main table).
void external_table(std::ostringstream& md, const std::vector<measured_config>& cs,
                    const config_scope& sat, const config_scope& rate,
                    const std::vector<const measured_config*>& ext,
                    std::vector<std::string>& summary) {
  const auto slots = knit_slots(cs, sat, rate);
  std::vector<std::string> head = {"server"};
  for (const auto& e : external_measures()) head.push_back(e.metric.name);
  std::string table;
  for (const measured_config* e : ext) {
    std::vector<std::string> peer_cells = {e->label + served_note(*e)};
    std::vector<std::string> knit_cells = {"knit, best row"};
    std::vector<std::string> ratios;
    for (const auto& x : external_measures()) {
      const config_scope& s = x.metric.mode == "sat" ? sat : rate;
      const measured_config* p = external_in(cs, s, e->label);
      bool peer_ok = p && serves(*p, x.metric) && !(x.metric.needs_rate_met && !met_rate(*p));
      rep_stat pv = peer_ok ? p->stat(x.metric.value) : rep_stat{};
      peer_cells.push_back(cell(pv, x.decimals) + (peer_ok && flagged(*p) ? kForeignMark : ""));
      const measured_config* k = knit_best(slots, s, x.metric);
      rep_stat kv = k ? k->stat(x.metric.value) : rep_stat{};
      knit_cells.push_back(kv ? "`" + k->label + "`: " + cell(kv, x.decimals) : "-");
      if (pv && kv)
        ratios.push_back(x.metric.name + " " + ratio_cell(paired_ratio(*k, *p, x.metric)));
    }
    table += md_row(peer_cells) + md_row(knit_cells);
    if (!ratios.empty()) {
      std::string line = "`" + e->label + "`" + served_note(*e) + " against knit's best row: ";
      for (size_t i = 0; i < ratios.size(); ++i) line += (i ? "; " : "") + ratios[i];
      summary.push_back(line);
    }
  }
  md << "#### External peers: a reference, not a like-for-like peer\n\n"
        "A server outside knit's process model (its own processes and event loop), loaded on "
        "the routes it serves with the same connections or rate per route. Its figures are a floor "
        "for what "
        "the machine allows on those routes, not an alternative a C++ user would write, so they "
        "are kept out of "
        "the comparison above. knit's cell is its best row on that measure (the row named); knit's "
        "CPU per "
        "request is over all three routes, the peer's over the routes it served.\n\n"
     << md_header(head) << table << "\n";
}

}  // namespace

std::string peers_section(const std::vector<measured_config>& cs, const config_scope& sat,
                          const config_scope& rate) {
  bool any_peer = false;
  for (const auto& c : cs)
    if ((in_scope(c, sat) || in_scope(c, rate)) && is_peer(c.policy)) any_peer = true;
  if (!any_peer) return "";

  std::ostringstream md;
  md << "### knit vs the peers\n\n"
        "Each cell is knit's ratio to the best in-process peer (`asio: N`, `multi: N`: the "
        "alternatives a C++ "
        "user would write) on that measure among those with as many threads running routes (event "
        "loop + "
        "workers: inline 1, `threads: N`, `auto: N` and `asio: N` N+1, `multi: N` N). External "
        "peers are "
        "reported apart, below. Higher-is-better measures are knit / peer, lower-is-better ones "
        "peer / knit, so "
        "**above 1× knit is ahead, below 1× the peer wins**. Median over repetitions paired by "
        "repetition number "
        "(interleaved, so measured close in time), min–max in parentheses; the best peer is the "
        "one with the best "
        "median.\n\n";
  std::vector<std::string> head = {"knit"};
  for (const auto& m : peer_metrics()) head.push_back(m.name);
  std::string table;
  std::vector<std::string> wins;
  std::vector<std::string> latencies;  // the fixed-rate /ping p99 medians behind the ratios
  for (const auto& slot : knit_slots(cs, sat, rate)) {
    std::vector<std::string> cells = {slot.label};
    bool any = false;
    for (const auto& m : peer_metrics()) {
      const config_scope& s = m.mode == "sat" ? sat : rate;
      versus_cell c = compare(cs, s, slot.find(s), m);
      if (c.ratio) any = true;
      if (c.peer_wins)
        wins.push_back("`" + slot.label + "` on " + m.name + ": " + ratio_cell(c.ratio) + " vs " +
                       c.best);
      cells.push_back(c.text);
      if (c.ratio && m.name == "/ping p99, fixed rate")
        latencies.push_back("`" + slot.label + "` " + fixed(c.knit_median, 2) + " ms vs `" +
                            c.best + "` " + fixed(c.best_median, 2) + " ms");
    }
    if (any) table += md_row(cells);
  }
  const std::vector<const measured_config*> ext = external_peers(cs, sat, rate);
  std::vector<std::string> ext_summary;
  if (table.empty()) {
    md << "No knit configuration has a comparable in-process peer in this profile.\n\n";
  } else {
    md << md_header(head) << table << "\n";
    if (!latencies.empty()) {
      // A ratio of these medians can differ from the median of the paired ratios above.
      md << "/ping p99 at the fixed rate, medians over repetitions: ";
      for (size_t i = 0; i < latencies.size(); ++i) md << (i ? "; " : "") << latencies[i];
      md << ".\n\n";
    }
    if (wins.empty()) md << "No in-process peer beats knit on these measures here.\n\n";
    else {
      md << "Where an in-process peer wins:\n\n";
      for (const auto& w : wins) md << "- " << w << "\n";
      md << "\n";
    }
  }
  std::ostringstream ext_md;
  if (!ext.empty()) external_table(ext_md, cs, sat, rate, ext, ext_summary);
  // One line on what the external peers show, right under the in-process verdict.
  for (const auto& line : ext_summary)
    md << "External peers, a reference (table below): " << line
       << " (below 1× the external server is ahead).\n\n";
  md << ext_md.str();
  // What the ratios above do not say.
  std::vector<std::string> missed;
  for (const auto& c : cs)
    if (in_scope(c, rate) &&
        (is_peer(c.policy) || c.policy == config_kind::inline_loop ||
         c.policy == config_kind::auto_mode || is_pool_policy(c.policy)) &&
        !met_rate(c))
      missed.push_back("`" + c.label + "`");
  if (!missed.empty()) {
    md << "- Left out of the fixed-rate columns because some repetition did not achieve the "
          "offered rate (it did "
          "less work, so its cores, CPU and latency would flatter it): ";
    for (size_t i = 0; i < missed.size(); ++i) md << (i ? ", " : "") << missed[i];
    md << ".\n";
  }
  for (const measured_config* e : ext) {
    std::string note = served_note(*e);
    if (!note.empty())
      md << "- `" << e->label << "` serves " << note.substr(2, note.size() - 8)
         << " only: it was loaded on that alone, with the same connections or rate per route; its "
            "totals are "
            "not the same work as knit's three routes.\n";
  }
  if (!ext.empty())
    md << "- External peers print no `knit-stats` line: their rows carry no pool counters "
          "(`null`); their CPU is the "
          "sum over every process they started.\n";
  bool any_flag = false;
  for (const auto& c : cs)
    if ((in_scope(c, sat) || in_scope(c, rate)) && flagged(c)) any_flag = true;
  if (any_flag)
    md << "-" << kForeignMark
       << " marks a figure or ratio resting on a window that stayed over the foreign-load limit "
          "(either side); "
          "read it as uncertain.\n";
  if (!ext.empty() || any_flag || !missed.empty()) md << "\n";
  return md.str();
}

}  // namespace knit::bench

// report.md from rows.jsonl alone (plus meta.json when present): the seed's tables
// A, B, C, pool counters and the cost sweep, one table set per cost profile.
#include "driver/report.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "driver/configs.hpp"
#include "driver/json_write.hpp"
#include "driver/md_table.hpp"
#include "driver/numfmt.hpp"
#include "driver/peer_report.hpp"

namespace knit::bench {
namespace {

namespace json = boost::json;
using Lines = std::ostringstream;

const char* const kRoutes[] = {"ping", "ssr", "jwt"};
const char* const kForeignMark = " \u26a0";

std::optional<double> opt_d(const std::optional<long long>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

Stat idle(const Config& c) { return c.stat([](const Row& r) { return std::optional<double>(r.idle_cores); }); }
Stat cores(const Config& c) { return c.stat([](const Row& r) { return std::optional<double>(r.cores); }); }
Stat total(const Config& c) {
  return c.stat([](const Row& r) { return std::optional<double>(static_cast<double>(r.total_rps)); });
}
Stat rps_core(const Config& c) { return c.stat([](const Row& r) { return opt_d(r.rps_per_core); }); }
Stat cpu_us(const Config& c) { return c.stat([](const Row& r) { return opt_d(r.cpu_us_per_req); }); }

// Next to every figure that rests on a window the machine was busy elsewhere during
// (Row::foreign_flagged), explained by foreign_load_note().
bool any_foreign_flagged(const Config& c) {
  for (const Row* r : c.reps)
    if (r->foreign_flagged.value_or(false)) return true;
  return false;
}
std::string mark(const Config& c) { return any_foreign_flagged(c) ? kForeignMark : ""; }
// A peer loaded on some routes only says so wherever its label appears: its totals and
// server cores are not the same work as a row that served all three.
std::string label_of(const Config& c) { return c.label + served_note(c) + mark(c); }

std::string row(const std::vector<std::string>& cells) { return md_row(cells); }
std::string header(const std::vector<std::string>& cells, const std::vector<bool>& right = {}) {
  return md_header(cells, right);
}

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

// Order of policies inside one pool size in the full CPU picture (the seed's order).
int policy_rank(const Config& c) {
  switch (c.policy) {
    case Policy::OldDefault: return 0;
    case Policy::Flat50: return 1;
    case Policy::NoSpin: return 2;
    case Policy::SeedPolicy: return 3;
    default: return 4;
  }
}

std::vector<const Config*> scoped(const std::vector<Config>& cs, const Scope& s, bool pooled_only) {
  std::vector<const Config*> v;
  for (const auto& c : cs)
    if (in_scope(c, s) && (!pooled_only || is_pool_policy(c.policy))) v.push_back(&c);
  std::stable_sort(v.begin(), v.end(), [](const Config* a, const Config* b) {
    if (a->threads != b->threads) return a->threads < b->threads;
    return policy_rank(*a) < policy_rank(*b);
  });
  return v;
}

// The rows of sections A and B: inline, the seed policy at each pool size, knit's auto
// mode, then the peers (asio, multi, external servers), each by thread count.
std::vector<const Config*> headline(const std::vector<Config>& cs, const Scope& s) {
  std::vector<const Config*> v;
  if (auto* c = inline_config(cs, s)) v.push_back(c);
  for (int n : pool_sizes(cs, s))
    if (auto* c = seed_policy_config(cs, s, n)) v.push_back(c);
  for (Policy p : {Policy::Auto, Policy::Asio, Policy::Multi}) {
    std::vector<const Config*> of;
    for (const auto& c : cs)
      if (in_scope(c, s) && c.policy == p) of.push_back(&c);
    std::stable_sort(of.begin(), of.end(), [](const Config* a, const Config* b) { return a->threads < b->threads; });
    v.insert(v.end(), of.begin(), of.end());
  }
  for (const Config* c : external_peers(cs, s)) v.push_back(c);
  return v;
}

std::string lat_pair(const Config& c, const std::string& route) {
  Stat p50 = c.route(route, &RouteStats::p50), p99 = c.route(route, &RouteStats::p99);
  return cell(p50, 2) + " / " + cell(p99, 2);
}

void section_a(Lines& md, const std::vector<Config>& cs, const Scope& sat) {
  auto rows = headline(cs, sat);
  md << "### A. Saturating load - throughput\n\n";
  if (rows.empty()) {
    md << "No saturating rows for this profile.\n\n";
    return;
  }
  Stat conns = rows.front()->stat([](const Row& r) -> std::optional<double> {
    if (!r.conns) return std::nullopt;
    return static_cast<double>(*r.conns);
  });
  md << "Closed loop, " << (conns ? fixed(conns.median, 0) + " connections per route" : "connections per route not recorded")
     << ", all three routes at once. Rows are the inline server and the seed policy at each pool size, "
        "then knit's auto mode and the peers (asio, multi, external servers) where measured.\n\n";
  const Config* base = inline_config(cs, sat);
  Stat base_total = base ? total(*base) : Stat{};
  md << header({"pool", "/ping", "/ssr", "/jwt", "total rps", "vs inline", "idle cores", "server cores", "rps/core",
                "CPU-us/req"});
  for (const Config* c : rows) {
    Stat t = total(*c);
    const bool same_work = routes_of(*c).size() == 3;
    std::string vs = (c == base || !base_total || !t || !same_work) ? "-" : pct_change(base_total.median, t.median);
    md << row({label_of(*c), cell(c->route("ping", &RouteStats::rps), 0), cell(c->route("ssr", &RouteStats::rps), 0),
               cell(c->route("jwt", &RouteStats::rps), 0), cell(t, 0), vs, cell(idle(*c), 3), cell(cores(*c), 2),
               cell(rps_core(*c), 0), cell(cpu_us(*c), 0)});
  }
  md << "\nLatency under the same saturating load (p50 / p99, ms):\n\n";
  md << header({"pool", "/ping", "/ssr", "/jwt"});
  for (const Config* c : rows) md << row({label_of(*c), lat_pair(*c, "ping"), lat_pair(*c, "ssr"), lat_pair(*c, "jwt")});
  bool deep = false;
  for (const Config* c : rows)
    if (c->route_opt("ping", &RouteStats::p999)) deep = true;
  if (deep) {
    md << "\nDeeper percentiles (p90 / p99.9 / max, ms). Short single windows cannot support p99.9; "
          "read it with the repetition spread:\n\n";
    md << header({"pool", "/ping", "/ssr", "/jwt"});
    for (const Config* c : rows) {
      std::vector<std::string> cells = {label_of(*c)};
      for (const char* r : kRoutes)
        cells.push_back(cell(c->route_opt(r, &RouteStats::p90), 2) + " / " + cell(c->route_opt(r, &RouteStats::p999), 2) +
                        " / " + cell(c->route_opt(r, &RouteStats::max), 2));
      md << row(cells);
    }
  }
  md << "\n";
}

void section_b(Lines& md, const std::vector<Config>& cs, const Scope& rate) {
  auto rows = headline(cs, rate);
  md << "### B. Fixed rate - latency\n\n";
  if (rows.empty()) {
    md << "No fixed-rate rows for this profile.\n\n";
    return;
  }
  // Offered rate: recorded in our rows; the seed's rows only show what was achieved.
  Stat offered = rows.front()->stat([](const Row& r) { return r.rate_per_route; });
  if (offered) {
    md << "Offered " << cell(offered, 0) << " rps per route (" << fixed(3 * offered.median, 0)
       << " total), a share of the inline saturating total measured earlier in the same run, "
          "so every configuration does the same work and only latency varies.";
  } else if (auto* in = inline_config(cs, rate)) {
    md << "Offered rate not recorded in these rows; the inline server achieved " << fixed(total(*in).median, 0)
       << " rps in total.";
  }
  std::vector<std::string> missed, failed;
  bool any_met_info = false;
  for (const Config* c : rows) {
    for (const Row* r : c->reps)
      for (const auto& [name, rs] : r->routes) {
        if (rs.rate_met) any_met_info = true;
        if (rs.rate_met && !*rs.rate_met) missed.push_back(c->label + " /" + name);
        if (rs.ok < 1.0) failed.push_back(c->label + " /" + name + " (" + fixed(rs.ok * 100, 2) + "%)");
      }
  }
  auto uniq = [](std::vector<std::string>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  uniq(missed);
  uniq(failed);
  if (any_met_info) {
    if (missed.empty()) md << " Every configuration achieved the offered rate";
    else {
      md << " **Rate not achieved:** ";
      for (size_t i = 0; i < missed.size(); ++i) md << (i ? ", " : "") << missed[i];
      md << "; latency there is not comparable";
    }
  }
  if (failed.empty()) md << (any_met_info ? ", with a 100% success rate.\n\n" : " Every configuration had a 100% success rate.\n\n");
  else {
    md << ". **Errors:** ";
    for (size_t i = 0; i < failed.size(); ++i) md << (i ? ", " : "") << failed[i];
    md << ".\n\n";
  }
  for (const char* r : kRoutes) {
    md << "**/" << r << "**" << (std::string(r) == "ping" ? " (never touches the pool)" : "") << "\n\n";
    md << header({"config", "p50", "p99", "server cores", "idle cores", "CPU-us/req"});
    for (const Config* c : rows) {
      if (!c->route(r, &RouteStats::p50)) continue;  // a peer that does not serve this route
      md << row({label_of(*c), cell(c->route(r, &RouteStats::p50), 2), cell(c->route(r, &RouteStats::p99), 2),
                 cell(cores(*c), 2), cell(idle(*c), 3), cell(cpu_us(*c), 0)});
    }
    md << "\n";
  }
}

void section_c(Lines& md, const std::vector<Config>& cs, const Scope& sat, const Scope& rate) {
  md << "### C. What the timer policy is worth\n\n";
  std::vector<int> sizes = pool_sizes(cs, sat);
  for (int n : pool_sizes(cs, rate))
    if (std::find(sizes.begin(), sizes.end(), n) == sizes.end()) sizes.push_back(n);
  std::sort(sizes.begin(), sizes.end());
  if (sizes.empty()) {
    md << "No pooled rows for this profile.\n\n";
    return;
  }
  // Idle cores come from the saturating rows (as in the seed), else the fixed-rate ones.
  auto pick = [&](int n, Policy p) -> const Config* {
    if (auto* c = p == Policy::SeedPolicy ? seed_policy_config(cs, sat, n) : policy_config(cs, sat, n, p)) return c;
    return p == Policy::SeedPolicy ? seed_policy_config(cs, rate, n) : policy_config(cs, rate, n, p);
  };
  md << "Idle cores: CPU used with the server started and no load offered. The old default spins "
        "N*50us and then parks 1ms, so the model predicts N * spin / (spin + park) cores.\n\n";
  md << header({"N", "idle cores, old default", "model", "idle cores, seed policy"}, {true, true, true, true});
  for (int n : sizes) {
    const Config* old = pick(n, Policy::OldDefault);
    const Config* seed = pick(n, Policy::SeedPolicy);
    double model = n * (n * 50.0) / (n * 50.0 + 1000.0);
    md << row({std::to_string(n), old ? cell(idle(*old), 3) : "-", fixed(model, 3), seed ? cell(idle(*seed), 3) : "-"});
  }
  md << "\n";

  bool any_old = false;
  for (int n : sizes)
    if (policy_config(cs, sat, n, Policy::OldDefault)) any_old = true;
  if (any_old) {
    md << "How much of the loaded CPU under the old default is idle spin (saturating):\n\n";
    md << header({"N", "loaded cores, old default", "idle cores", "useful (loaded - idle)"}, {true, true, true, true});
    for (int n : sizes) {
      const Config* old = policy_config(cs, sat, n, Policy::OldDefault);
      if (!old) continue;
      Stat l = cores(*old), i = idle(*old);
      md << row({std::to_string(n), cell(l, 2), cell(i, 3), (l && i) ? fixed(l.median - i.median, 2) : "-"});
    }
    md << "\n";
  }

  md << "#### The full CPU picture\n\nEvery pool size against every policy measured. **Bold** marks the seed policy "
        "(the row used in sections A and B).\n\n";
  for (const Scope* s : {&sat, &rate}) {
    auto v = scoped(cs, *s, true);
    if (v.empty()) continue;
    const bool is_sat = s->mode == "sat";
    md << (is_sat ? "Saturating load:\n\n" : "Fixed rate, so every row does the same work:\n\n");
    if (is_sat)
      md << header({"N", "policy", "idle cores", "server cores", "rps/core", "CPU-us/req"},
                   {true, false, true, true, true, true});
    else
      md << header({"N", "policy", "idle cores", "server cores", "CPU-us/req", "/ssr p99"},
                   {true, false, true, true, true, true});
    int last_n = -1;
    for (const Config* c : v) {
      const bool bold = c == seed_policy_config(cs, *s, c->threads);
      auto b = [&](const std::string& x) { return bold && x != "-" ? "**" + x + "**" : x; };
      std::string n = c->threads == last_n ? "" : std::to_string(c->threads);
      last_n = c->threads;
      if (is_sat)
        md << row({n, b(c->policy_label) + mark(*c), b(cell(idle(*c), 3)), b(cell(cores(*c), 2)), b(cell(rps_core(*c), 0)),
                   b(cell(cpu_us(*c), 0))});
      else
        md << row({n, b(c->policy_label) + mark(*c), b(cell(idle(*c), 3)), b(cell(cores(*c), 2)), b(cell(cpu_us(*c), 0)),
                   b(cell(c->route("ssr", &RouteStats::p99), 2))});
    }
    md << "\n";
  }

  // Before / after: the old default against the seed policy at each size where both ran.
  std::string ba;
  for (auto it = sizes.rbegin(); it != sizes.rend(); ++it) {
    int n = *it;
    std::string who = "`threads: " + std::to_string(n) + "`";
    auto add = [&](const std::string& what, const Stat& o, const Stat& s, int dec, const std::string& unit,
                   const std::string& change) {
      if (!o || !s) return;
      ba += row({who + " " + what, cell(o, dec) + unit, cell(s, dec) + unit, change});
    };
    const Config* o_sat = policy_config(cs, sat, n, Policy::OldDefault);
    const Config* s_sat = seed_policy_config(cs, sat, n);
    const Config* o_rate = policy_config(cs, rate, n, Policy::OldDefault);
    const Config* s_rate = seed_policy_config(cs, rate, n);
    if (o_sat && s_sat && o_sat != s_sat) {
      Stat a = rps_core(*o_sat), b = rps_core(*s_sat);
      if (a && b) add("rps/core, saturating", a, b, 0, "", ratio_text(a.median, b.median, true));
    }
    if (o_rate && s_rate && o_rate != s_rate) {
      Stat a = cpu_us(*o_rate), b = cpu_us(*s_rate);
      if (a && b) add("CPU-us/request, fixed rate", a, b, 0, "", ratio_text(a.median, b.median, false));
      Stat pa = o_rate->route("ssr", &RouteStats::p99), pb = s_rate->route("ssr", &RouteStats::p99);
      if (pa && pb) add("/ssr p99, fixed rate", pa, pb, 2, "ms", pct_change(pa.median, pb.median));
    }
    const Config* o_i = o_sat ? o_sat : o_rate;
    const Config* s_i = o_sat ? s_sat : s_rate;
    if (o_i && s_i && o_i != s_i) {
      Stat a = idle(*o_i), b = idle(*s_i);
      if (a && b) add("idle cores", a, b, 3, "", ratio_text(a.median, b.median, false));
    }
  }
  if (!ba.empty()) {
    md << "#### Before and after\n\nSame machine, same workload; only the timer policy differs.\n\n";
    md << header({"", "old default", "seed policy", "change"}, {false, true, true, false}) << ba << "\n";
  }
}

void pool_counter_section(Lines& md, const std::vector<Config>& cs, const std::string& profile) {
  std::vector<const Config*> v;
  std::set<std::string> keys;
  for (const auto& c : cs) {
    if (c.profile != profile || c.extra_cost_us || c.policy == Policy::Inline) continue;
    bool has = false;
    for (const Row* r : c.reps)
      if (!r->pool_per_call.empty()) {
        has = true;
        for (const auto& [k, x] : r->pool_per_call) keys.insert(k);
      }
    if (has) v.push_back(&c);
  }
  md << "### Pool counters\n\n";
  if (v.empty()) {
    md << "No pool counters in these rows (inline only, seed rows, or a server without SIGUSR1 stats).\n\n";
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
    for (const Config* c : v)
      for (const Row* r : c->reps)
        if (auto it = r->pool_counters.find(k); it != r->pool_counters.end()) {
          seen = true;
          nonzero = nonzero || it->second != 0;
        }
    if (nonzero) stuck_cols.push_back(k);
    else if (seen) zero.push_back(k);
  }
  // The counters that explain a pool's cost first; anything new the server adds follows.
  std::vector<std::string> cols;
  for (const char* k : {"host_wakes", "completion_batches", "completion_signals", "peer_wakes", "wakes_doorbell",
                        "wakes_timeout", "parks", "spin_hits", "calls_stolen", "calls_run", "calls_completed"})
    if (keys.erase(k)) cols.push_back(k);
  for (const auto& k : keys) cols.push_back(k);
  // Counters that stayed at zero everywhere (rejections, timeouts...) only widen the table.
  std::erase_if(cols, [&](const std::string& k) {
    for (const Config* c : v)
      for (const Row* r : c->reps)
        if (auto it = r->pool_per_call.find(k); it != r->pool_per_call.end() && it->second != 0) return false;
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
  for (const Config* c : v) {
    std::vector<std::string> cells = {label_of(*c), c->policy_label, c->mode,
                                      cell(c->stat([](const Row& r) -> std::optional<double> {
                                        auto it = r.pool_counters.find("calls_submitted");
                                        if (it == r.pool_counters.end()) return std::nullopt;
                                        return it->second;
                                      }),
                                           0)};
    for (const auto& k : cols)
      cells.push_back(cell(c->stat([&](const Row& r) -> std::optional<double> {
                             auto it = r.pool_per_call.find(k);
                             if (it == r.pool_per_call.end()) return std::nullopt;
                             return it->second;
                           }),
                           3));
    for (const auto& k : stuck_cols)
      cells.push_back(cell(c->stat([&](const Row& r) -> std::optional<double> {
                             auto it = r.pool_counters.find(k);
                             if (it == r.pool_counters.end()) return std::nullopt;
                             return it->second;
                           }),
                           0));
    md << row(cells);
  }
  md << "\n";
}

// Smallest cost from which the best pool beats inline at every larger measured cost.
std::string crossover(const std::vector<int>& costs, const std::map<int, std::optional<bool>>& wins,
                      const std::string& what) {
  std::vector<int> known;
  for (int c : costs)
    if (wins.at(c).has_value()) known.push_back(c);
  if (known.empty()) return "- " + what + ": not enough data.\n";
  if (!*wins.at(known.back()))
    return "- " + what + ": pooling did not pay at the largest measured cost (" + std::to_string(known.back()) +
           " us); no crossover in range.\n";
  size_t i = known.size();
  while (i > 0 && *wins.at(known[i - 1])) --i;
  if (i == 0)
    return "- " + what + ": pooling pays at every measured cost, already at " + std::to_string(known.front()) + " us.\n";
  return "- " + what + ": pooling starts to pay between " + std::to_string(known[i - 1]) + " and " +
         std::to_string(known[i]) + " us of extra CPU per heavy call (and keeps paying above).\n";
}

void sweep_section(Lines& md, const std::vector<Config>& cs, const std::string& profile,
                   const std::vector<ChartRef>& charts) {
  std::vector<int> costs;
  for (const auto& c : cs)
    if (c.extra_cost_us && c.profile == profile && std::find(costs.begin(), costs.end(), *c.extra_cost_us) == costs.end())
      costs.push_back(*c.extra_cost_us);
  std::sort(costs.begin(), costs.end());
  std::vector<int> sizes;
  for (int cost : costs)
    for (const char* m : {"sat", "rate"})
      for (int n : pool_sizes(cs, {profile, cost, m}))
        if (std::find(sizes.begin(), sizes.end(), n) == sizes.end()) sizes.push_back(n);
  std::sort(sizes.begin(), sizes.end());

  md << "## Cost sweep" << (profile.empty() ? "" : " (cost profile " + profile + ")") << "\n\n"
     << "Extra CPU added to every /ssr and /jwt call (`KNIT_SSR_COST_US`, `KNIT_JWT_COST_US`): where does moving "
        "the heavy routes off the event loop start to pay? Pools use the seed policy; the crossover below compares "
        "them with inline, and auto and the asio peer are shown beside them.\n\n";

  // knit's auto mode and the peers (asio, multi) at each thread count measured in the sweep.
  std::vector<std::pair<Policy, int>> others;
  for (const auto& c : cs)
    if (c.extra_cost_us && c.profile == profile && (c.policy == Policy::Auto || c.policy == Policy::Asio ||
                                                    c.policy == Policy::Multi)) {
      std::pair<Policy, int> k{c.policy, c.threads};
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
    Scope s{profile, cost, "sat"};
    const Config* in = inline_config(cs, s);
    Stat base = in ? total(*in) : Stat{};
    std::vector<std::string> cells = {std::to_string(cost), cell(base, 0) + (in ? mark(*in) : "")};
    std::optional<double> best;
    for (int n : sizes) {
      const Config* c = seed_policy_config(cs, s, n);
      Stat t = c ? total(*c) : Stat{};
      cells.push_back(cell(t, 0) + (c ? mark(*c) : ""));
      if (t && (!best || t.median > *best)) best = t.median;
    }
    for (const auto& [p, n] : others) {
      const Config* c = mode_config(cs, s, p, n);
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
    Scope s{profile, cost, "rate"};
    const Config* in = inline_config(cs, s);
    Stat base = in ? in->route("ping", &RouteStats::p99) : Stat{};
    Stat offered = in ? in->stat([](const Row& r) { return r.rate_per_route; }) : Stat{};
    std::vector<std::string> cells = {std::to_string(cost), cell(offered, 0), cell(base, 2)};
    std::optional<double> best;
    for (int n : sizes) {
      const Config* c = seed_policy_config(cs, s, n);
      Stat p = c ? c->route("ping", &RouteStats::p99) : Stat{};
      cells.push_back(cell(p, 2));
      if (p && (!best || p.median < *best)) best = p.median;
    }
    for (const auto& [pol, n] : others) {
      const Config* c = mode_config(cs, s, pol, n);
      cells.push_back(c ? cell(c->route("ping", &RouteStats::p99), 2) + mark(*c) : "-");
    }
    md << row(cells);
    p99_wins[cost] = (base && best) ? std::optional<bool>(*best < base.median) : std::nullopt;
  }
  md << "\nCrossover (best pool size against inline):\n\n"
     << crossover(costs, rps_wins, "Total rps, saturating") << crossover(costs, p99_wins, "/ping p99, fixed rate")
     << "\n";
  for (const auto& ch : charts)
    if (ch.section == "sweep:" + profile) md << "![" << ch.title << "](" << ch.file << ")\n\n";
}

void run_header(Lines& md, const json::object* run, size_t index, size_t count) {
  if (count > 1) md << "Run " << index + 1 << " of " << count << ":\n\n";
  const json::object* machine = obj_of(run, "machine");
  const json::object* layout = obj_of(run, "cpu_layout");
  md << header({"", ""});
  md << row({"Machine", str_of(machine, "model") + ", " + str_of(machine, "cpus") + " CPUs, " + str_of(machine, "kernel")});
  md << row({"Date", str_of(run, "started") + (str_of(run, "finished").empty() ? "" : " to " + str_of(run, "finished"))});
  md << row({"Command", "`" + str_of(run, "command") + "`"});
  md << row({"Plan", str_of(run, "plan") + ", " + str_of(run, "cases") + " cases x " + str_of(run, "repeat") +
                         " repetition(s), interleaved"});
  md << row({"Durations", "idle " + str_of(run, "idle_s") + " s, warm-up " + str_of(run, "warmup_s") + " s, window " +
                              str_of(run, "window_s") + " s"});
  md << row({"Load", "closed loop " + str_of(run, "conns") + " connections/route; fixed rate = " +
                         fixed(std::stod(str_of(run, "rate_fraction").empty() ? "0.7" : str_of(run, "rate_fraction")) * 100, 0) +
                         "% of the inline saturating total (per route: that / 3)"});
  auto cpus = [&](const char* k) {
    std::string v = str_of(layout, k);
    return v.empty() ? std::string("unpinned") : v;
  };
  md << row({"CPU layout", "server CPUs " + cpus("server_cpus") + ", generator CPUs " + cpus("gen_cpus")});
  md << row({"Binaries", "`" + str_of(run, "server") + "`, `" + str_of(run, "load") + "`"});
  md << row({"Status", str_of(run, "status")});
  md << "\n";
}

}  // namespace

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

std::string foreign_load_note(const std::vector<Row>& rows) {
  int measured = 0, reran = 0;
  double worst = 0;
  std::vector<const Row*> flagged;
  for (const Row& r : rows) {
    if (!r.foreign_cores) continue;
    ++measured;
    worst = std::max(worst, *r.foreign_cores);
    if (r.foreign_reruns.value_or(0) > 0) ++reran;
    if (r.foreign_flagged.value_or(false)) flagged.push_back(&r);
  }
  if (measured == 0) return "";
  Lines md;
  md << "Foreign load: each window recorded the CPU the machine spent outside the server, the load generator and "
        "the driver (`foreign_cores`, from `/proc/stat`); at most "
     << fixed(worst, 2) << " cores over " << measured << " window(s)";
  if (reran) md << "; " << reran << " case(s) were measured again because another job was using the machine";
  md << ".";
  if (flagged.empty()) {
    md << " No window stayed over the limit.\n\n";
    return md.str();
  }
  md << "\n\n>" << kForeignMark << " " << flagged.size()
     << " window(s) stayed over the limit after their reruns; figures resting on them are marked" << kForeignMark
     << " and may be low: ";
  for (size_t i = 0; i < flagged.size(); ++i) {
    const Row& r = *flagged[i];
    md << (i ? "; " : "") << r.tag << " " << r.mode;
    if (r.extra_cost_us) md << " extra " << *r.extra_cost_us << "us";
    md << " rep " << r.rep + 1 << " (" << fixed(*r.foreign_cores, 2) << " cores foreign)";
  }
  md << ".\n\n";
  return md.str();
}

std::string mode_mismatch_note(const std::vector<Row>& rows) {
  std::vector<std::string> seen;
  for (const Row& r : rows) {
    if (!r.reported_mode || *r.reported_mode == r.server_mode) continue;
    std::string what = "`" + r.tag + "` " + r.mode + " asked for " + r.server_mode + ", knit-stats said " + *r.reported_mode;
    if (std::find(seen.begin(), seen.end(), what) == seen.end()) seen.push_back(what);
  }
  if (seen.empty()) return "";
  std::string s = "> Warning: the server ran another mode than some rows are named for, so those rows measure the "
                  "reported mode: ";
  for (size_t i = 0; i < seen.size(); ++i) s += (i ? "; " : "") + seen[i];
  return s + ".\n\n";
}

std::string render_markdown(const std::vector<Row>& rows, const json::object* meta, const std::vector<ChartRef>& charts,
                            const std::vector<std::string>& warnings) {
  Lines md;
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
    Stat w, id;
    for (const auto& c : cs) {
      if (!w) w = c.stat([](const Row& r) { return r.window_s; });
      if (!id) id = c.stat([](const Row& r) { return r.idle_s; });
    }
    if (w || id)
      md << " Durations from the rows: idle " << (id ? shortest(id.median) : "?") << " s, window "
         << (w ? shortest(w.median) : "?") << " s.";
    md << "\n\n";
  }
  auto prof = profiles(cs, false);
  auto sweep_prof = profiles(cs, true);
  std::string plist;
  for (const auto& p : prof) plist += (plist.empty() ? "" : ", ") + (p.empty() ? std::string("not recorded") : p);
  for (const auto& p : sweep_prof)
    if (std::find(prof.begin(), prof.end(), p) == prof.end())
      plist += (plist.empty() ? "" : ", ") + (p.empty() ? std::string("not recorded") : p) + " (cost sweep)";
  md << "Cost profile(s): " << (plist.empty() ? "none" : plist) << ".\n\n";

  bool repeated = false, seed_rows = false;
  for (const auto& c : cs) {
    if (c.reps.size() > 1) repeated = true;
    for (const Row* r : c.reps)
      if (is_seed_schema(*r)) seed_rows = true;
  }
  md << "Columns: *idle cores* is server CPU with no load offered; *server cores* is server CPU-seconds over the "
        "window divided by its length; *CPU-us/req* is server CPU per request served. Latencies are in ms. "
        "The *seed policy* is the library default (spin 50us at one worker, none above); the *old default* spins "
        "N*50us and parks 1ms.\n\n";
  if (repeated) md << "Repeated configurations show the median, with min–max in parentheses.\n\n";
  if (seed_rows)
    md << "Some rows use the seed's schema: tag `only` is the inline server; spin `default` is the old default "
          "(N*50us, park 1ms), which is also the seed policy at N=1; spin `0` is the seed policy at N>=2.\n\n";
  for (const auto& w : warnings) md << "> Warning: " << w << "\n\n";
  md << mode_mismatch_note(rows);
  md << foreign_load_note(rows);

  for (const auto& p : prof) {
    md << "## Cost profile: " << (p.empty() ? "not recorded (seed rows)" : p) << "\n\n";
    Scope sat{p, std::nullopt, "sat"}, rate{p, std::nullopt, "rate"};
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
  for (const auto& p : sweep_prof) sweep_section(md, cs, p, charts);
  return md.str();
}

std::string write_report(const std::string& rows_path, bool with_charts, std::vector<std::string>* warnings_out) {
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
  ChartSet charts;
  if (with_charts) {
    charts = render_charts(group_configs(rows), dir.string());
    warnings.insert(warnings.end(), charts.warnings.begin(), charts.warnings.end());
  }
  std::string md = render_markdown(rows, meta ? &meta->get_object() : nullptr, charts.charts, warnings);
  std::string out = (dir / "report.md").string();
  std::ofstream f(out, std::ios::trunc);
  f << md;
  if (!f) throw std::runtime_error("cannot write " + out);
  if (warnings_out) *warnings_out = warnings;
  return out;
}

}  // namespace knit::bench

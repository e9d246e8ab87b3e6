// Groups rows into configurations (all repetitions of one case) and names their
// timer policy, reading both the reference benchmark's schema and ours. Shared by report and
// charts.
#include "driver/report/configs.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "driver/run/numfmt.hpp"

namespace knit::bench {
namespace {

bool park_is_default(const std::string& park) { return park.empty() || park == "default"; }
bool park_is_1ms(const std::string& park) { return park == "1" || park == "default"; }

// The spin an old-default row used: the reference rows' "default" means threads*50.
std::optional<double> spin_us(const result_row& r) {
  if (r.spin == "default") return r.threads * 50.0;
  if (r.spin.empty()) return std::nullopt;
  return std::stod(r.spin);
}

std::optional<double> park_ms(const result_row& r) {
  if (r.park == "default") return 1.0;  // the reference server's library default
  if (r.park.empty()) return std::nullopt;
  return std::stod(r.park);
}

std::string config_key(const result_row& r) {
  std::string k =
      r.cost_profile + "|" + (r.extra_cost_us ? std::to_string(*r.extra_cost_us) : "-") + "|" +
      r.mode + "|" + r.tag + "|" + r.server_mode + "|" + std::to_string(r.threads) + "|" +
      std::to_string(r.hosts) + "|" + std::to_string(r.fleet) + "|" + r.spin + "|" + r.park + "|" +
      (r.doorbell ? (*r.doorbell ? "1" : "0") : "") + "|" + (r.steal ? (*r.steal ? "1" : "0") : "");
  for (const auto& [n, v] : r.env) k += "|" + n + "=" + v;
  return k;
}

std::string other_label(const result_row& r) {
  std::string s;
  auto add = [&](const std::string& part) {
    if (!s.empty()) s += ", ";
    s += part;
  };
  if (!r.spin.empty())
    add("spin " + (r.spin == "default" ? std::to_string(r.threads * 50) : r.spin) + "us");
  if (!r.park.empty()) add("park " + (r.park == "default" ? std::string("1") : r.park) + "ms");
  if (r.doorbell && !*r.doorbell) add("no doorbell");
  if (r.steal && !*r.steal) add("no stealing");
  for (const auto& [n, v] : r.env) add(n + "=" + v);
  return s.empty() ? "library default" : s;
}

}  // namespace

config_kind classify(const result_row& r) {
  if (r.server_mode == "inline") return config_kind::inline_loop;
  if (r.server_mode == "auto") return config_kind::auto_mode;
  if (r.server_mode == "asio") return config_kind::asio;
  if (r.server_mode == "multi") return config_kind::multi;
  if (r.server_mode.rfind("peer:", 0) == 0) return config_kind::peer;
  const bool extras = (r.doorbell && !*r.doorbell) || (r.steal && !*r.steal) || !r.env.empty();
  if (extras) return config_kind::other;
  if (r.spin.empty() && r.park.empty()) return config_kind::default_policy;
  // Reference rows spell the old default "default"; ours spell it out as N*50 and park 1.
  // (The reference flat-50 row at N=1 has spin "50" with park "default": that is Flat50.)
  if (r.spin == "default" && park_is_1ms(r.park)) return config_kind::old_default;
  if (r.spin == std::to_string(r.threads * 50) && r.park == "1") return config_kind::old_default;
  if (r.spin == "50" && park_is_default(r.park)) return config_kind::flat50;
  if (r.spin == "0" && park_is_default(r.park)) return config_kind::no_spin;
  return config_kind::other;
}

std::string policy_name(config_kind p) {
  switch (p) {
    case config_kind::inline_loop: return "inline";
    case config_kind::default_policy: return "default policy";
    case config_kind::old_default: return "old default";
    case config_kind::flat50: return "flat 50us";
    case config_kind::no_spin: return "no spin";
    case config_kind::other: return "other";
    case config_kind::auto_mode: return "auto";
    case config_kind::asio: return "asio";
    case config_kind::multi: return "multi";
    case config_kind::peer: return "peer";
  }
  return "?";
}

bool is_peer(config_kind p) {
  return p == config_kind::asio || p == config_kind::multi || p == config_kind::peer;
}

bool is_pool_policy(config_kind p) {
  return p == config_kind::default_policy || p == config_kind::old_default ||
         p == config_kind::flat50 || p == config_kind::no_spin || p == config_kind::other;
}

rep_stat measured_config::stat(
    const std::function<std::optional<double>(const result_row&)>& f) const {
  std::vector<double> v;
  for (const result_row* r : reps)
    if (auto x = f(*r); x && std::isfinite(*x)) v.push_back(*x);
  rep_stat s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.n = static_cast<int>(v.size());
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return s;
}

rep_stat measured_config::route(const std::string& route, double route_row_stats::*field) const {
  return stat([&](const result_row& r) -> std::optional<double> {
    auto it = r.routes.find(route);
    if (it == r.routes.end()) return std::nullopt;
    return it->second.*field;
  });
}

rep_stat measured_config::route_opt(const std::string& route,
                                    std::optional<double> route_row_stats::*field) const {
  return stat([&](const result_row& r) -> std::optional<double> {
    auto it = r.routes.find(route);
    if (it == r.routes.end()) return std::nullopt;
    return it->second.*field;
  });
}

std::vector<measured_config> group_configs(const std::vector<result_row>& rows) {
  std::vector<measured_config> out;
  std::map<std::string, size_t> index;
  for (const result_row& r : rows) {
    auto key = config_key(r);
    auto it = index.find(key);
    if (it != index.end()) {
      out[it->second].reps.push_back(&r);
      continue;
    }
    measured_config c;
    c.profile = r.cost_profile;
    c.extra_cost_us = r.extra_cost_us;
    c.mode = r.mode;
    c.tag = r.tag;
    c.policy = classify(r);
    c.threads =
        c.policy == config_kind::inline_loop || c.policy == config_kind::peer ? 0 : r.threads;
    const std::string n = std::to_string(r.threads);
    switch (c.policy) {
      case config_kind::inline_loop: c.label = "inline"; break;
      case config_kind::auto_mode: c.label = "auto: " + n; break;
      case config_kind::asio: c.label = "asio: " + n; break;
      case config_kind::multi: c.label = "multi: " + n; break;
      case config_kind::peer: c.label = "peer: " + r.server_mode.substr(5); break;
      default: c.label = "threads: " + n; break;
    }
    c.hosts = r.hosts;
    if (c.hosts > 1) c.label += ", hosts: " + std::to_string(c.hosts);
    c.fleet = r.fleet;
    if (c.fleet > 0) c.label += ", fleet: " + std::to_string(c.fleet);
    c.stands_for_default = (c.threads == 1 && c.policy == config_kind::old_default) ||
                           (c.threads >= 2 && c.policy == config_kind::no_spin);
    switch (c.policy) {
      case config_kind::inline_loop: c.policy_label = "inline"; break;
      case config_kind::default_policy: c.policy_label = "default policy (library default)"; break;
      case config_kind::old_default:
        c.policy_label = "old default (" + std::to_string(r.threads * 50) + "us + park 1ms)";
        if (c.threads == 1) c.policy_label += ", = default policy at N=1";
        break;
      case config_kind::flat50: c.policy_label = "flat 50us"; break;
      case config_kind::no_spin:
        c.policy_label = c.threads >= 2 ? "no spin (= default policy)" : "no spin";
        break;
      case config_kind::other: c.policy_label = other_label(r); break;
      case config_kind::auto_mode:
        c.policy_label = "auto (inline or pool per route, by measured cost)";
        break;
      case config_kind::asio:
        c.policy_label = "asio thread_pool(" + n + "), results posted to the io_context";
        break;
      case config_kind::multi:
        c.policy_label = "one io_context run by " + n + " threads, every route inline";
        break;
      case config_kind::peer: c.policy_label = "external peer"; break;
    }
    c.reps.push_back(&r);
    index[key] = out.size();
    out.push_back(std::move(c));
  }
  return out;
}

bool in_scope(const measured_config& c, const config_scope& s) {
  return c.profile == s.profile && c.extra_cost_us == s.extra_cost_us && c.mode == s.mode &&
         c.hosts == s.hosts && c.fleet == s.fleet;
}

const measured_config* inline_config(const std::vector<measured_config>& cs,
                                     const config_scope& s) {
  for (const auto& c : cs)
    if (in_scope(c, s) && c.policy == config_kind::inline_loop) return &c;
  return nullptr;
}

const measured_config* policy_config(const std::vector<measured_config>& cs, const config_scope& s,
                                     int threads, config_kind p) {
  for (const auto& c : cs)
    if (in_scope(c, s) && c.threads == threads && c.policy == p) return &c;
  return nullptr;
}

const measured_config* mode_config(const std::vector<measured_config>& cs, const config_scope& s,
                                   config_kind p, int threads) {
  for (const auto& c : cs)
    if (in_scope(c, s) && c.policy == p && c.threads == threads) return &c;
  return nullptr;
}

std::vector<const measured_config*> external_peers(const std::vector<measured_config>& cs,
                                                   const config_scope& s) {
  std::vector<const measured_config*> v;
  for (const auto& c : cs)
    if (in_scope(c, s) && c.policy == config_kind::peer) v.push_back(&c);
  return v;
}

std::vector<std::string> routes_of(const measured_config& c) {
  std::vector<std::string> v;
  for (const char* known : {"ping", "ssr", "jwt"})
    for (const result_row* r : c.reps)
      if (r->routes.count(known)) {
        v.push_back(known);
        break;
      }
  for (const result_row* r : c.reps)
    for (const auto& [name, rs] : r->routes)
      if (std::find(v.begin(), v.end(), name) == v.end()) v.push_back(name);
  return v;
}

const measured_config* default_policy_config(const std::vector<measured_config>& cs,
                                             const config_scope& s, int threads) {
  if (auto* c = policy_config(cs, s, threads, config_kind::default_policy)) return c;
  for (const auto& c : cs)
    if (in_scope(c, s) && c.threads == threads && c.stands_for_default) return &c;
  return nullptr;
}

std::vector<int> pool_sizes(const std::vector<measured_config>& cs, const config_scope& s) {
  std::vector<int> n;
  for (const auto& c : cs)
    if (in_scope(c, s) && is_pool_policy(c.policy) &&
        std::find(n.begin(), n.end(), c.threads) == n.end())
      n.push_back(c.threads);
  std::sort(n.begin(), n.end());
  return n;
}

std::vector<std::string> profiles(const std::vector<measured_config>& cs, bool sweep) {
  std::vector<std::string> p;
  for (const auto& c : cs)
    if (c.extra_cost_us.has_value() == sweep && std::find(p.begin(), p.end(), c.profile) == p.end())
      p.push_back(c.profile);
  return p;
}

std::vector<int> host_counts(const std::vector<measured_config>& cs, const std::string& profile) {
  std::vector<int> h;
  for (const auto& c : cs)
    if (!c.extra_cost_us && c.profile == profile &&
        std::find(h.begin(), h.end(), c.hosts) == h.end())
      h.push_back(c.hosts);
  std::sort(h.begin(), h.end());
  return h;
}

std::optional<double> idle_model(const result_row& r) {
  auto s = spin_us(r);
  auto p = park_ms(r);
  if (!s || !p || r.threads <= 0) return std::nullopt;
  double park_us = *p * 1000.0;
  if (*s + park_us <= 0) return std::nullopt;
  return r.threads * *s / (*s + park_us);
}

std::string cell(const rep_stat& s, int decimals) {
  if (!s) return "-";
  std::string m = fixed(s.median, decimals);
  std::string lo = fixed(s.min, decimals), hi = fixed(s.max, decimals);
  // A spread that rounds away is not worth printing.
  if (s.n == 1 || lo == hi) return m;
  return m + " (" + lo + "–" + hi + ")";
}

sweep_axes sweep_axes_of(const std::vector<measured_config>& cs, const std::string& profile) {
  sweep_axes a;
  for (const auto& c : cs)
    if (c.extra_cost_us && c.profile == profile &&
        std::find(a.costs.begin(), a.costs.end(), *c.extra_cost_us) == a.costs.end())
      a.costs.push_back(*c.extra_cost_us);
  std::sort(a.costs.begin(), a.costs.end());
  for (int cost : a.costs)
    for (const char* m : {"sat", "rate"})
      for (int n : pool_sizes(cs, {profile, cost, m}))
        if (std::find(a.sizes.begin(), a.sizes.end(), n) == a.sizes.end()) a.sizes.push_back(n);
  std::sort(a.sizes.begin(), a.sizes.end());
  return a;
}

}  // namespace knit::bench

// Groups rows into configurations (all repetitions of one case) and names their
// timer policy, reading both the seed's schema and ours. Shared by report and charts.
#include "driver/configs.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "driver/numfmt.hpp"

namespace knit::bench {
namespace {

bool park_is_default(const std::string& park) { return park.empty() || park == "default"; }
bool park_is_1ms(const std::string& park) { return park == "1" || park == "default"; }

// The spin an old-default row used: seed "default" means threads*50.
std::optional<double> spin_us(const Row& r) {
  if (r.spin == "default") return r.threads * 50.0;
  if (r.spin.empty()) return std::nullopt;
  return std::stod(r.spin);
}

std::optional<double> park_ms(const Row& r) {
  if (r.park == "default") return 1.0;  // the seed's library default
  if (r.park.empty()) return std::nullopt;
  return std::stod(r.park);
}

std::string config_key(const Row& r) {
  std::string k = r.cost_profile + "|" + (r.extra_cost_us ? std::to_string(*r.extra_cost_us) : "-") + "|" +
                  r.mode + "|" + r.tag + "|" + r.server_mode + "|" + std::to_string(r.threads) + "|" + r.spin +
                  "|" + r.park + "|" + (r.doorbell ? (*r.doorbell ? "1" : "0") : "") + "|" +
                  (r.steal ? (*r.steal ? "1" : "0") : "");
  for (const auto& [n, v] : r.env) k += "|" + n + "=" + v;
  return k;
}

std::string other_label(const Row& r) {
  std::string s;
  auto add = [&](const std::string& part) {
    if (!s.empty()) s += ", ";
    s += part;
  };
  if (!r.spin.empty()) add("spin " + (r.spin == "default" ? std::to_string(r.threads * 50) : r.spin) + "us");
  if (!r.park.empty()) add("park " + (r.park == "default" ? std::string("1") : r.park) + "ms");
  if (r.doorbell && !*r.doorbell) add("no doorbell");
  if (r.steal && !*r.steal) add("no stealing");
  for (const auto& [n, v] : r.env) add(n + "=" + v);
  return s.empty() ? "library default" : s;
}

}  // namespace

Policy classify(const Row& r) {
  if (r.server_mode == "inline") return Policy::Inline;
  if (r.server_mode == "auto") return Policy::Auto;
  if (r.server_mode == "asio") return Policy::Asio;
  if (r.server_mode == "multi") return Policy::Multi;
  if (r.server_mode.rfind("peer:", 0) == 0) return Policy::Peer;
  const bool extras = (r.doorbell && !*r.doorbell) || (r.steal && !*r.steal) || !r.env.empty();
  if (extras) return Policy::Other;
  if (r.spin.empty() && r.park.empty()) return Policy::SeedPolicy;
  // Seed rows spell the old default "default"; ours spell it out as N*50 and park 1.
  // (The seed's flat-50 row at N=1 has spin "50" with park "default": that is Flat50.)
  if (r.spin == "default" && park_is_1ms(r.park)) return Policy::OldDefault;
  if (r.spin == std::to_string(r.threads * 50) && r.park == "1") return Policy::OldDefault;
  if (r.spin == "50" && park_is_default(r.park)) return Policy::Flat50;
  if (r.spin == "0" && park_is_default(r.park)) return Policy::NoSpin;
  return Policy::Other;
}

std::string policy_name(Policy p) {
  switch (p) {
    case Policy::Inline: return "inline";
    case Policy::SeedPolicy: return "seed policy";
    case Policy::OldDefault: return "old default";
    case Policy::Flat50: return "flat 50us";
    case Policy::NoSpin: return "no spin";
    case Policy::Other: return "other";
    case Policy::Auto: return "auto";
    case Policy::Asio: return "asio";
    case Policy::Multi: return "multi";
    case Policy::Peer: return "peer";
  }
  return "?";
}

bool is_peer(Policy p) { return p == Policy::Asio || p == Policy::Multi || p == Policy::Peer; }

bool is_pool_policy(Policy p) {
  return p == Policy::SeedPolicy || p == Policy::OldDefault || p == Policy::Flat50 || p == Policy::NoSpin ||
         p == Policy::Other;
}

Stat Config::stat(const std::function<std::optional<double>(const Row&)>& f) const {
  std::vector<double> v;
  for (const Row* r : reps)
    if (auto x = f(*r); x && std::isfinite(*x)) v.push_back(*x);
  Stat s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.n = static_cast<int>(v.size());
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return s;
}

Stat Config::route(const std::string& route, double RouteStats::*field) const {
  return stat([&](const Row& r) -> std::optional<double> {
    auto it = r.routes.find(route);
    if (it == r.routes.end()) return std::nullopt;
    return it->second.*field;
  });
}

Stat Config::route_opt(const std::string& route, std::optional<double> RouteStats::*field) const {
  return stat([&](const Row& r) -> std::optional<double> {
    auto it = r.routes.find(route);
    if (it == r.routes.end()) return std::nullopt;
    return it->second.*field;
  });
}

std::vector<Config> group_configs(const std::vector<Row>& rows) {
  std::vector<Config> out;
  std::map<std::string, size_t> index;
  for (const Row& r : rows) {
    auto key = config_key(r);
    auto it = index.find(key);
    if (it != index.end()) {
      out[it->second].reps.push_back(&r);
      continue;
    }
    Config c;
    c.profile = r.cost_profile;
    c.extra_cost_us = r.extra_cost_us;
    c.mode = r.mode;
    c.tag = r.tag;
    c.policy = classify(r);
    c.threads = c.policy == Policy::Inline || c.policy == Policy::Peer ? 0 : r.threads;
    const std::string n = std::to_string(r.threads);
    switch (c.policy) {
      case Policy::Inline: c.label = "inline"; break;
      case Policy::Auto: c.label = "auto: " + n; break;
      case Policy::Asio: c.label = "asio: " + n; break;
      case Policy::Multi: c.label = "multi: " + n; break;
      case Policy::Peer: c.label = "peer: " + r.server_mode.substr(5); break;
      default: c.label = "threads: " + n; break;
    }
    c.seed_equivalent = (c.threads == 1 && c.policy == Policy::OldDefault) ||
                        (c.threads >= 2 && c.policy == Policy::NoSpin);
    switch (c.policy) {
      case Policy::Inline: c.policy_label = "inline"; break;
      case Policy::SeedPolicy: c.policy_label = "seed policy (library default)"; break;
      case Policy::OldDefault:
        c.policy_label = "old default (" + std::to_string(r.threads * 50) + "us + park 1ms)";
        if (c.threads == 1) c.policy_label += ", = seed policy at N=1";
        break;
      case Policy::Flat50: c.policy_label = "flat 50us"; break;
      case Policy::NoSpin: c.policy_label = c.threads >= 2 ? "no spin (= seed policy)" : "no spin"; break;
      case Policy::Other: c.policy_label = other_label(r); break;
      case Policy::Auto: c.policy_label = "auto (inline or pool per route, by measured cost)"; break;
      case Policy::Asio: c.policy_label = "asio thread_pool(" + n + "), results posted to the io_context"; break;
      case Policy::Multi: c.policy_label = "one io_context run by " + n + " threads, every route inline"; break;
      case Policy::Peer: c.policy_label = "external peer"; break;
    }
    c.reps.push_back(&r);
    index[key] = out.size();
    out.push_back(std::move(c));
  }
  return out;
}

bool in_scope(const Config& c, const Scope& s) {
  return c.profile == s.profile && c.extra_cost_us == s.extra_cost_us && c.mode == s.mode;
}

const Config* inline_config(const std::vector<Config>& cs, const Scope& s) {
  for (const auto& c : cs)
    if (in_scope(c, s) && c.policy == Policy::Inline) return &c;
  return nullptr;
}

const Config* policy_config(const std::vector<Config>& cs, const Scope& s, int threads, Policy p) {
  for (const auto& c : cs)
    if (in_scope(c, s) && c.threads == threads && c.policy == p) return &c;
  return nullptr;
}

const Config* mode_config(const std::vector<Config>& cs, const Scope& s, Policy p, int threads) {
  for (const auto& c : cs)
    if (in_scope(c, s) && c.policy == p && c.threads == threads) return &c;
  return nullptr;
}

std::vector<const Config*> external_peers(const std::vector<Config>& cs, const Scope& s) {
  std::vector<const Config*> v;
  for (const auto& c : cs)
    if (in_scope(c, s) && c.policy == Policy::Peer) v.push_back(&c);
  return v;
}

std::vector<std::string> routes_of(const Config& c) {
  std::vector<std::string> v;
  for (const char* known : {"ping", "ssr", "jwt"})
    for (const Row* r : c.reps)
      if (r->routes.count(known)) {
        v.push_back(known);
        break;
      }
  for (const Row* r : c.reps)
    for (const auto& [name, rs] : r->routes)
      if (std::find(v.begin(), v.end(), name) == v.end()) v.push_back(name);
  return v;
}

const Config* seed_policy_config(const std::vector<Config>& cs, const Scope& s, int threads) {
  if (auto* c = policy_config(cs, s, threads, Policy::SeedPolicy)) return c;
  for (const auto& c : cs)
    if (in_scope(c, s) && c.threads == threads && c.seed_equivalent) return &c;
  return nullptr;
}

std::vector<int> pool_sizes(const std::vector<Config>& cs, const Scope& s) {
  std::vector<int> n;
  for (const auto& c : cs)
    if (in_scope(c, s) && is_pool_policy(c.policy) && std::find(n.begin(), n.end(), c.threads) == n.end())
      n.push_back(c.threads);
  std::sort(n.begin(), n.end());
  return n;
}

std::vector<std::string> profiles(const std::vector<Config>& cs, bool sweep) {
  std::vector<std::string> p;
  for (const auto& c : cs)
    if (c.extra_cost_us.has_value() == sweep && std::find(p.begin(), p.end(), c.profile) == p.end())
      p.push_back(c.profile);
  return p;
}

std::optional<double> idle_model(const Row& r) {
  auto s = spin_us(r);
  auto p = park_ms(r);
  if (!s || !p || r.threads <= 0) return std::nullopt;
  double park_us = *p * 1000.0;
  if (*s + park_us <= 0) return std::nullopt;
  return r.threads * *s / (*s + park_us);
}

std::string cell(const Stat& s, int decimals) {
  if (!s) return "-";
  std::string m = fixed(s.median, decimals);
  std::string lo = fixed(s.min, decimals), hi = fixed(s.max, decimals);
  // A spread that rounds away is not worth printing.
  if (s.n == 1 || lo == hi) return m;
  return m + " (" + lo + "–" + hi + ")";
}

}  // namespace knit::bench

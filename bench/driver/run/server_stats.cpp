// The server's SIGUSR1 "knit-stats {json}" line: parsing, and the counter diff over a window.
#include "driver/run/server_stats.hpp"

#include <boost/json.hpp>

#include "driver/run/numfmt.hpp"

namespace knit::bench {
namespace {

namespace json = boost::json;

// pool.totals is treated generically: whatever numeric fields the server reports get
// diffed, so adding a counter on the server side needs no change here.
void flatten(const json::object& o, const std::string& prefix, std::map<std::string, double>& out) {
  for (const auto& kv : o) {
    std::string key = prefix + std::string(kv.key());
    if (kv.value().is_number()) out[key] = kv.value().to_number<double>();
    else if (kv.value().is_object()) flatten(kv.value().get_object(), key + ".", out);
  }
}

}  // namespace

std::optional<server_stats> parse_stats_line(std::string_view line) {
  constexpr std::string_view prefix = "knit-stats ";
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.substr(0, prefix.size()) != prefix) return std::nullopt;
  boost::system::error_code ec;
  json::value v = json::parse(line.substr(prefix.size()), ec);
  if (ec || !v.is_object()) return std::nullopt;
  const auto& o = v.get_object();
  server_stats s;
  if (auto* m = o.if_contains("mode"); m && m->is_string()) s.mode = std::string(m->get_string());
  if (auto* r = o.if_contains("requests"); r && r->is_object())
    flatten(r->get_object(), "", s.requests);
  if (auto* h = o.if_contains("hosts"); h && h->is_array())
    s.hosts = static_cast<int>(h->get_array().size());
  if (auto* p = o.if_contains("pool"); p && p->is_object()) {
    s.has_pool = true;
    const auto& po = p->get_object();
    if (auto* t = po.if_contains("threads"); t && t->is_number())
      s.pool_threads = static_cast<int>(t->to_number<double>());
    if (auto* t = po.if_contains("totals"); t && t->is_object())
      flatten(t->get_object(), "", s.pool_totals);
  }
  return s;
}

bool is_gauge(const std::string& key) { return key == "retired_running"; }

std::map<std::string, double> diff_counters(const std::map<std::string, double>& before,
                                            const std::map<std::string, double>& after) {
  std::map<std::string, double> d;
  for (const auto& [k, v] : after) {
    auto it = before.find(k);
    d[k] = is_gauge(k) ? v : v - (it == before.end() ? 0.0 : it->second);
  }
  return d;
}

std::map<std::string, double> per_call(const std::map<std::string, double>& diff) {
  std::map<std::string, double> out;
  double calls = 0;
  if (auto it = diff.find("calls_submitted"); it != diff.end()) calls = it->second;
  if (calls <= 0)
    if (auto it = diff.find("calls_completed"); it != diff.end()) calls = it->second;
  if (calls <= 0) return out;
  for (const auto& [k, v] : diff) {
    if (k == "calls_submitted" || is_gauge(k)) continue;
    out[k] = py_round(v / calls, 4);
  }
  return out;
}

}  // namespace knit::bench

// One measured case as a row of rows.jsonl: the struct, and its JSON line both ways.
#include "driver/run/rows.hpp"

#include <cmath>
#include <fstream>
#include <set>
#include <stdexcept>

#include "driver/run/json_write.hpp"

namespace knit::bench {
namespace {

namespace json = boost::json;

[[noreturn]] void bad(const std::string& field, const std::string& why) {
  throw std::runtime_error("row field \"" + field + "\": " + why);
}

std::optional<double> opt_num(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) return std::nullopt;
  if (!v->is_number()) bad(key, "expected a number");
  return v->to_number<double>();
}

double req_num(const json::object& o, const char* key) {
  auto v = opt_num(o, key);
  if (!v) bad(key, "missing");
  return *v;
}

std::optional<long long> opt_int(const json::object& o, const char* key) {
  auto v = opt_num(o, key);
  if (!v) return std::nullopt;
  return static_cast<long long>(*v);
}

std::string str(const json::object& o, const char* key, bool required) {
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) {
    if (required) bad(key, "missing");
    return "";
  }
  if (v->is_string()) return std::string(v->get_string());
  // The reference benchmark wrote strings for spin/park; accept plain numbers too.
  if (v->is_int64()) return std::to_string(v->get_int64());
  if (v->is_uint64()) return std::to_string(v->get_uint64());
  bad(key, "expected a string");
}

// Reference rows carry doorbell as a boolean; plans write "0"/"1"; null means unset.
std::optional<bool> flag(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) return std::nullopt;
  if (v->is_bool()) return v->get_bool();
  if (v->is_string()) {
    if (v->get_string() == "1" || v->get_string() == "true") return true;
    if (v->get_string() == "0" || v->get_string() == "false") return false;
    if (v->get_string().empty()) return std::nullopt;
  }
  if (v->is_int64()) return v->get_int64() != 0;
  bad(key, "expected a boolean, \"0\"/\"1\" or null");
}

std::map<std::string, double> num_map(const json::object& o, const char* key) {
  std::map<std::string, double> m;
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) return m;
  if (!v->is_object()) bad(key, "expected an object");
  for (const auto& kv : v->get_object())
    if (kv.value().is_number()) m[std::string(kv.key())] = kv.value().to_number<double>();
  return m;
}

std::map<std::string, std::string> str_map(const json::object& o, const char* key) {
  std::map<std::string, std::string> m;
  const json::value* v = o.if_contains(key);
  if (!v || v->is_null()) return m;
  if (!v->is_object()) bad(key, "expected an object");
  for (const auto& kv : v->get_object()) {
    if (!kv.value().is_string())
      bad(std::string(key) + "." + std::string(kv.key()), "expected a string");
    m[std::string(kv.key())] = std::string(kv.value().get_string());
  }
  return m;
}

json::value opt_value(const std::optional<bool>& b) {
  return b ? json::value(*b) : json::value(nullptr);
}

template <class T>
json::object to_obj(const std::map<std::string, T>& m) {
  json::object o;
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

route_row_stats route_from_json(const json::value& v, const std::string& name) {
  if (!v.is_object()) bad("routes." + name, "expected an object");
  const auto& o = v.get_object();
  route_row_stats r;
  try {
    r.rps = req_num(o, "rps");
    r.p50 = req_num(o, "p50");
    r.p99 = req_num(o, "p99");
    r.ok = opt_num(o, "ok").value_or(1.0);
    r.p90 = opt_num(o, "p90");
    r.p999 = opt_num(o, "p999");
    r.max = opt_num(o, "max");
    r.rate_target = opt_num(o, "rate_target");
    if (auto* m = o.if_contains("rate_met"); m && m->is_bool()) r.rate_met = m->get_bool();
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("routes." + name + ": " + e.what());
  }
  return r;
}

json::object route_to_json(const route_row_stats& r) {
  json::object o;
  o["rps"] = r.rps;
  o["p50"] = r.p50;
  if (r.p90) o["p90"] = *r.p90;
  o["p99"] = r.p99;
  if (r.p999) o["p999"] = *r.p999;
  if (r.max) o["max"] = *r.max;
  o["ok"] = r.ok;
  if (r.rate_target) o["rate_target"] = *r.rate_target;
  if (r.rate_met) o["rate_met"] = *r.rate_met;
  return o;
}

const std::set<std::string>& known_keys() {
  static const std::set<std::string> k = {"tag",
                                          "mode",
                                          "threads",
                                          "spin",
                                          "park",
                                          "doorbell",
                                          "idle_cores",
                                          "total_rps",
                                          "cores",
                                          "rps_per_core",
                                          "cpu_us_per_req",
                                          "os_threads",
                                          "gen_cores",
                                          "routes",
                                          "server_mode",
                                          "hosts",
                                          "fleet",
                                          "steal",
                                          "cost_profile",
                                          "extra_cost_us",
                                          "env",
                                          "rep",
                                          "idle_s",
                                          "warmup_s",
                                          "window_s",
                                          "conns",
                                          "rate_per_route",
                                          "pool_counters",
                                          "pool_per_call",
                                          "server_requests",
                                          "cpu_layout",
                                          "cpu",
                                          "server_env",
                                          "load_cmd",
                                          "server_pid",
                                          "foreign_cores",
                                          "foreign_flagged",
                                          "foreign_reruns",
                                          "peer_command",
                                          "peer_processes",
                                          "reported_mode",
                                          "reported_hosts"};
  return k;
}

}  // namespace

bool is_reference_schema(const result_row& r) {
  return r.spin == "default" || r.park == "default" || r.tag == "only";
}

json::object row_to_json(const result_row& r) {
  json::object o;
  // The reference fields first, in their order, so rows diff cleanly against its rows.
  o["tag"] = r.tag;
  o["mode"] = r.mode;
  o["threads"] = r.threads;
  o["spin"] = r.spin;
  o["park"] = r.park;
  o["doorbell"] = opt_value(r.doorbell);
  o["idle_cores"] = r.idle_cores;
  o["total_rps"] = r.total_rps;
  o["cores"] = r.cores;
  o["rps_per_core"] = r.rps_per_core ? json::value(*r.rps_per_core) : json::value(nullptr);
  o["cpu_us_per_req"] = r.cpu_us_per_req ? json::value(*r.cpu_us_per_req) : json::value(nullptr);
  o["os_threads"] = r.os_threads;
  o["gen_cores"] = r.gen_cores;
  json::object routes;
  for (const char* name : {"ping", "ssr", "jwt"})
    if (auto it = r.routes.find(name); it != r.routes.end())
      routes[name] = route_to_json(it->second);
  for (const auto& [name, rs] : r.routes)
    if (!routes.contains(name)) routes[name] = route_to_json(rs);
  o["routes"] = std::move(routes);

  o["server_mode"] = r.server_mode;
  o["hosts"] = r.hosts;
  if (r.fleet != 0) o["fleet"] = r.fleet;
  o["steal"] = opt_value(r.steal);
  o["cost_profile"] = r.cost_profile;
  o["extra_cost_us"] = r.extra_cost_us ? json::value(*r.extra_cost_us) : json::value(nullptr);
  if (!r.env.empty()) o["env"] = to_obj(r.env);
  o["rep"] = r.rep;
  if (r.idle_s) o["idle_s"] = *r.idle_s;
  if (r.warmup_s) o["warmup_s"] = *r.warmup_s;
  if (r.window_s) o["window_s"] = *r.window_s;
  if (r.conns) o["conns"] = *r.conns;
  if (r.rate_per_route) o["rate_per_route"] = *r.rate_per_route;
  if (r.server_mode.rfind("peer:", 0) == 0) {
    // Not measured rather than zero: an external peer prints no knit-stats line.
    o["pool_counters"] = nullptr;
    o["pool_per_call"] = nullptr;
    o["server_requests"] = nullptr;
  }
  if (!r.pool_counters.empty()) o["pool_counters"] = to_obj(r.pool_counters);
  if (!r.pool_per_call.empty()) o["pool_per_call"] = to_obj(r.pool_per_call);
  if (!r.server_requests.empty()) o["server_requests"] = to_obj(r.server_requests);
  if (!r.cpu_layout.empty()) o["cpu_layout"] = r.cpu_layout;
  if (!r.cpu.empty()) o["cpu"] = r.cpu;
  if (!r.server_env.empty()) o["server_env"] = to_obj(r.server_env);
  if (!r.load_cmd.empty()) {
    json::array a;
    for (const auto& s : r.load_cmd) a.push_back(json::value(s));
    o["load_cmd"] = std::move(a);
  }
  if (r.server_pid) o["server_pid"] = *r.server_pid;
  if (r.foreign_cores) o["foreign_cores"] = *r.foreign_cores;
  if (r.foreign_flagged) o["foreign_flagged"] = *r.foreign_flagged;
  if (r.foreign_reruns) o["foreign_reruns"] = *r.foreign_reruns;
  if (r.peer_command) o["peer_command"] = *r.peer_command;
  if (r.peer_processes) o["peer_processes"] = *r.peer_processes;
  if (r.reported_mode) o["reported_mode"] = *r.reported_mode;
  if (r.reported_hosts) o["reported_hosts"] = *r.reported_hosts;
  for (const auto& kv : r.unknown) o[kv.key()] = kv.value();
  return o;
}

std::string row_to_json_line(const result_row& r) { return to_json_line(row_to_json(r)); }

result_row row_from_json(const json::value& v) {
  if (!v.is_object()) throw std::runtime_error("row must be a JSON object");
  const auto& o = v.get_object();
  result_row r;
  r.tag = str(o, "tag", true);
  r.mode = str(o, "mode", true);
  if (r.mode != "sat" && r.mode != "rate" && r.mode != "pipelined")
    bad("mode", "expected \"sat\", \"rate\" or \"pipelined\", got \"" + r.mode + "\"");
  r.threads = static_cast<int>(opt_num(o, "threads").value_or(0));
  r.spin = str(o, "spin", false);
  r.park = str(o, "park", false);
  r.doorbell = flag(o, "doorbell");
  r.steal = flag(o, "steal");
  r.server_mode = str(o, "server_mode", false);
  // Reference rows: the inline baseline was tagged "only" (hono_only); everything else was a pool.
  if (r.server_mode.empty()) r.server_mode = r.tag == "only" ? "inline" : "pooled";
  // Rows from before KNIT_HOSTS ran one event loop.
  if (auto h = opt_num(o, "hosts")) {
    if (!(*h >= 1 && *h <= 1e6) || std::floor(*h) != *h) bad("hosts", "expected an integer >= 1");
    r.hosts = static_cast<int>(*h);
  }
  if (auto f = opt_num(o, "fleet")) {
    if (!(*f >= 0 && *f <= 64) || std::floor(*f) != *f) bad("fleet", "expected an integer 0-64");
    r.fleet = static_cast<int>(*f);
  }
  r.cost_profile = str(o, "cost_profile", false);
  if (auto x = opt_num(o, "extra_cost_us")) r.extra_cost_us = static_cast<int>(*x);
  r.env = str_map(o, "env");
  r.rep = static_cast<int>(opt_num(o, "rep").value_or(0));

  r.idle_cores = req_num(o, "idle_cores");
  r.total_rps = static_cast<long long>(req_num(o, "total_rps"));
  r.cores = req_num(o, "cores");
  r.rps_per_core = opt_int(o, "rps_per_core");
  r.cpu_us_per_req = opt_int(o, "cpu_us_per_req");
  r.os_threads = static_cast<int>(opt_num(o, "os_threads").value_or(0));
  r.gen_cores = opt_num(o, "gen_cores").value_or(0);
  const json::value* routes = o.if_contains("routes");
  if (!routes || !routes->is_object()) bad("routes", "missing or not an object");
  for (const auto& kv : routes->get_object())
    r.routes[std::string(kv.key())] = route_from_json(kv.value(), std::string(kv.key()));

  r.idle_s = opt_num(o, "idle_s");
  r.warmup_s = opt_num(o, "warmup_s");
  r.window_s = opt_num(o, "window_s");
  if (auto c = opt_num(o, "conns")) r.conns = static_cast<int>(*c);
  r.rate_per_route = opt_num(o, "rate_per_route");
  r.pool_counters = num_map(o, "pool_counters");
  r.pool_per_call = num_map(o, "pool_per_call");
  r.server_requests = num_map(o, "server_requests");
  if (auto* l = o.if_contains("cpu_layout"); l && l->is_object()) r.cpu_layout = l->get_object();
  if (auto* c = o.if_contains("cpu"); c && c->is_object()) r.cpu = c->get_object();
  r.server_env = str_map(o, "server_env");
  if (auto* lc = o.if_contains("load_cmd"); lc && lc->is_array())
    for (const auto& e : lc->get_array())
      if (e.is_string()) r.load_cmd.emplace_back(e.get_string());
  r.server_pid = opt_int(o, "server_pid");
  r.foreign_cores = opt_num(o, "foreign_cores");
  r.foreign_flagged = flag(o, "foreign_flagged");
  if (auto n = opt_num(o, "foreign_reruns")) r.foreign_reruns = static_cast<int>(*n);
  if (auto* pc = o.if_contains("peer_command"); pc && pc->is_string())
    r.peer_command = std::string(pc->get_string());
  if (auto n = opt_num(o, "peer_processes")) r.peer_processes = static_cast<int>(*n);
  if (auto* rm = o.if_contains("reported_mode"); rm && rm->is_string())
    r.reported_mode = std::string(rm->get_string());
  if (auto n = opt_num(o, "reported_hosts")) r.reported_hosts = static_cast<int>(*n);
  for (const auto& kv : o)
    if (!known_keys().count(std::string(kv.key()))) r.unknown[kv.key()] = kv.value();
  return r;
}

result_row row_from_json_line(std::string_view line) {
  return row_from_json(parse_json(line, "row"));
}

std::vector<result_row> read_rows_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<result_row> rows;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      rows.push_back(row_from_json_line(line));
    } catch (const std::exception& e) {
      throw std::runtime_error(path + ":" + std::to_string(n) + ": " + e.what());
    }
  }
  return rows;
}

void append_row_file(const std::string& path, const result_row& r) {
  std::ofstream out(path, std::ios::app);
  if (!out) throw std::runtime_error("cannot append to " + path);
  out << row_to_json_line(r) << '\n';
  out.flush();
  if (!out) throw std::runtime_error("write failed: " + path);
}

}  // namespace knit::bench

// Benchmark plans: the list of server configurations to measure, as JSON.
#include "driver/run/plan.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "driver/run/json_write.hpp"

namespace knit::bench {
namespace {

namespace json = boost::json;

// Builds "plan case 3 (tag "t4")" so every error points at the offending entry.
std::string where(size_t index, const std::string& tag) {
  std::string s = "plan case " + std::to_string(index + 1);
  if (!tag.empty()) s += " (tag \"" + tag + "\")";
  return s;
}

std::string kind_name(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_: return "a number";
    case json::kind::string: return "a string";
    case json::kind::array: return "an array";
    case json::kind::object: return "an object";
  }
  return "?";
}

// Settings such as spin are strings so that "" can mean unset; numbers are accepted
// too because {"spin": 0} is the natural thing to write.
std::string setting_text(const json::value& v, const std::string& ctx, const std::string& field) {
  if (v.is_string()) return std::string(v.get_string());
  if (v.is_int64() && v.get_int64() >= 0) return std::to_string(v.get_int64());
  if (v.is_uint64()) return std::to_string(v.get_uint64());
  if (v.is_bool()) return v.get_bool() ? "1" : "0";
  throw plan_error(ctx + ": field \"" + field +
                   "\" must be a string or a non-negative integer, got " + kind_name(v));
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

bool valid_env_name(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_')) return false;
  return true;
}

long long integer_field(const json::value& v, const std::string& ctx, const std::string& field,
                        long long lo, long long hi) {
  long long n = 0;
  if (v.is_int64()) {
    n = v.get_int64();
  } else if (v.is_uint64()) {
    n = static_cast<long long>(std::min<uint64_t>(v.get_uint64(), INT64_MAX));
  } else if (v.is_double() && std::floor(v.get_double()) == v.get_double()) {
    n = static_cast<long long>(v.get_double());
  } else {
    throw plan_error(ctx + ": field \"" + field + "\" must be an integer, got " + kind_name(v));
  }
  if (n < lo || n > hi)
    throw plan_error(ctx + ": field \"" + field + "\" must be between " + std::to_string(lo) +
                     " and " + std::to_string(hi) + ", got " + std::to_string(n));
  return n;
}

std::string string_field(const json::value& v, const std::string& ctx, const std::string& field) {
  if (!v.is_string())
    throw plan_error(ctx + ": field \"" + field + "\" must be a string, got " + kind_name(v));
  return std::string(v.get_string());
}

void check_one_of(const std::string& value, std::initializer_list<const char*> allowed,
                  const std::string& ctx, const std::string& field) {
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return;
    if (!list.empty()) list += ", ";
    list += std::string("\"") + a + "\"";
  }
  throw plan_error(ctx + ": field \"" + field + "\" must be one of " + list + ", got \"" + value +
                   "\"");
}

// The variables the driver derives from fields; a plan's "env" may not override them,
// or the row would describe one configuration while the server ran another.
const std::set<std::string>& owned_vars() {
  static const std::set<std::string> vars = {"PORT",
                                             "HOST",
                                             "KNIT_MODE",
                                             "KNIT_THREADS",
                                             "KNIT_HOSTS",
                                             "KNIT_SPIN",
                                             "KNIT_PARK",
                                             "KNIT_DOORBELL",
                                             "KNIT_STEAL",
                                             "KNIT_COST_PROFILE",
                                             "KNIT_SSR_COST_US",
                                             "KNIT_JWT_COST_US"};
  return vars;
}

bool valid_peer_name(const std::string& s) {
  if (s.empty()) return false;
  for (char ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.'))
      return false;
  return true;
}

plan_case parse_case(const json::value& v, size_t index) {
  if (!v.is_object())
    throw plan_error(where(index, "") + ": must be an object, got " + kind_name(v));
  const auto& o = v.get_object();
  plan_case c;
  std::string tag;
  if (auto* t = o.if_contains("tag"); t && t->is_string()) tag = std::string(t->get_string());
  const std::string ctx = where(index, tag);

  static const std::set<std::string> known = {
      "tag",     "mode",   "server_mode",  "threads",       "spin",  "park",           "doorbell",
      "steal",   "env",    "cost_profile", "extra_cost_us", "conns", "rate_per_route", "note",
      "command", "routes", "hosts",        "fleet"};
  for (const auto& kv : o) {
    if (!known.count(std::string(kv.key())))
      throw plan_error(
          ctx + ": unknown field \"" + std::string(kv.key()) +
          "\" (known: tag, mode, server_mode, threads, hosts, fleet, spin, park, doorbell, steal, "
          "env, cost_profile, extra_cost_us, conns, rate_per_route, command, routes, note)");
  }

  const json::value* tv = o.if_contains("tag");
  if (!tv) throw plan_error(ctx + ": missing field \"tag\"");
  c.tag = string_field(*tv, ctx, "tag");
  if (c.tag.empty() || c.tag.find_first_of("/ \t\n") != std::string::npos)
    throw plan_error(ctx + ": field \"tag\" must be a non-empty name without spaces or '/'");

  if (auto* m = o.if_contains("mode")) c.mode = string_field(*m, ctx, "mode");
  check_one_of(c.mode, {"sat", "rate", "pipelined"}, ctx, "mode");
  if (auto* m = o.if_contains("server_mode")) c.server_mode = string_field(*m, ctx, "server_mode");
  if (is_peer_case(c)) {
    if (!valid_peer_name(c.server_mode.substr(5)))
      throw plan_error(ctx + ": field \"server_mode\" \"" + c.server_mode +
                       "\": a peer name is letters, digits, '_', '-' or '.'");
  } else {
    check_one_of(c.server_mode, {"inline", "pooled", "asio", "multi", "auto"}, ctx, "server_mode");
  }
  if (auto* t = o.if_contains("threads"))
    c.threads = static_cast<int>(integer_field(*t, ctx, "threads", 0, 4096));
  if (auto* h = o.if_contains("hosts"))
    c.hosts = static_cast<int>(integer_field(*h, ctx, "hosts", 1, 1024));
  if (auto* f = o.if_contains("fleet"))
    c.fleet = static_cast<int>(integer_field(*f, ctx, "fleet", 0, 64));

  if (auto* s = o.if_contains("spin")) c.spin = setting_text(*s, ctx, "spin");
  if (!c.spin.empty() && !all_digits(c.spin))
    throw plan_error(ctx + ": field \"spin\" must be microseconds (digits) or \"\", got \"" +
                     c.spin + "\"");
  if (auto* s = o.if_contains("park")) c.park = setting_text(*s, ctx, "park");
  if (!c.park.empty() && !all_digits(c.park))
    throw plan_error(ctx + ": field \"park\" must be milliseconds (digits) or \"\", got \"" +
                     c.park + "\"");
  if (auto* s = o.if_contains("doorbell")) c.doorbell = setting_text(*s, ctx, "doorbell");
  check_one_of(c.doorbell, {"", "0", "1"}, ctx, "doorbell");
  if (auto* s = o.if_contains("steal")) c.steal = setting_text(*s, ctx, "steal");
  check_one_of(c.steal, {"", "0", "1"}, ctx, "steal");
  if (auto* s = o.if_contains("cost_profile"))
    c.cost_profile = string_field(*s, ctx, "cost_profile");
  check_one_of(c.cost_profile, {"", "bun", "native"}, ctx, "cost_profile");
  if (auto* s = o.if_contains("extra_cost_us"); s && !s->is_null())
    c.extra_cost_us = static_cast<int>(integer_field(*s, ctx, "extra_cost_us", 0, 10'000'000));
  if (auto* s = o.if_contains("conns"))
    c.conns = static_cast<int>(integer_field(*s, ctx, "conns", 0, 100000));
  if (auto* s = o.if_contains("rate_per_route")) {
    if (!s->is_number())
      throw plan_error(ctx + ": field \"rate_per_route\" must be a number, got " + kind_name(*s));
    c.rate_per_route = s->to_number<double>();
    if (!(c.rate_per_route >= 0) || !std::isfinite(c.rate_per_route))
      throw plan_error(ctx + ": field \"rate_per_route\" must be >= 0");
    if (c.mode != "rate" && c.rate_per_route > 0)
      throw plan_error(ctx + ": field \"rate_per_route\" only applies to mode \"rate\"");
  }
  if (auto* e = o.if_contains("env")) {
    if (!e->is_object())
      throw plan_error(ctx + ": field \"env\" must be an object, got " + kind_name(*e));
    for (const auto& kv : e->get_object()) {
      std::string name(kv.key());
      if (!valid_env_name(name))
        throw plan_error(ctx + ": env name \"" + name + "\" is not a valid variable name");
      if (owned_vars().count(name))
        throw plan_error(ctx + ": env \"" + name +
                         "\" is set by the driver from the case's fields; use the field instead");
      if (kv.value().is_string()) c.env[name] = std::string(kv.value().get_string());
      else if (kv.value().is_number()) c.env[name] = setting_text(kv.value(), ctx, "env." + name);
      else
        throw plan_error(ctx + ": env \"" + name + "\" must be a string, got " +
                         kind_name(kv.value()));
    }
  }
  // Only knit's own pool (pooled, auto) reads the timer settings.
  const bool knit_pool = c.server_mode == "pooled" || c.server_mode == "auto";
  if (!knit_pool && (!c.spin.empty() || !c.park.empty() || !c.doorbell.empty() || !c.steal.empty()))
    throw plan_error(
        ctx + ": pool settings (spin, park, doorbell, steal) make no sense with server_mode \"" +
        c.server_mode + "\"");
  if (auto* cmd = o.if_contains("command")) c.peer_command = string_field(*cmd, ctx, "command");
  if (auto* r = o.if_contains("routes")) {
    if (!r->is_array())
      throw plan_error(ctx + ": field \"routes\" must be an array, got " + kind_name(*r));
    for (const auto& e : r->get_array()) {
      std::string name = string_field(e, ctx, "routes");
      check_one_of(name, {"ping", "ssr", "jwt"}, ctx, "routes");
      if (std::find(c.peer_routes.begin(), c.peer_routes.end(), name) != c.peer_routes.end())
        throw plan_error(ctx + ": field \"routes\" names \"" + name + "\" twice");
      c.peer_routes.push_back(name);
    }
    if (c.peer_routes.empty())
      throw plan_error(ctx + ": field \"routes\" must name at least one route");
  }
  if (is_peer_case(c)) {
    if (c.peer_command.empty())
      throw plan_error(ctx + ": a peer case needs a non-empty \"command\"");
    if (c.threads != 0)
      throw plan_error(
          ctx + ": field \"threads\" sets KNIT_THREADS, which an external peer does not read");
    if (c.hosts != 1)
      throw plan_error(ctx +
                       ": field \"hosts\" sets KNIT_HOSTS, which an external peer does not read");
    if (c.fleet != 0)
      throw plan_error(ctx +
                       ": field \"fleet\" runs knit-server instances behind HAProxy; an "
                       "external peer is a server of its own");
  } else {
    if (!c.peer_command.empty() || !c.peer_routes.empty())
      throw plan_error(ctx +
                       ": fields \"command\" and \"routes\" are for server_mode \"peer:NAME\" only "
                       "(knit-server serves every route)");
  }
  return c;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw plan_error("cannot read plan file " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

bool is_peer_case(const plan_case& c) { return c.server_mode.rfind("peer:", 0) == 0; }

std::vector<std::string> case_routes(const plan_case& c) {
  if (c.mode == "pipelined") return {"plaintext"};  // wrk_run.hpp's kPipelinedRoute
  if (!c.peer_routes.empty()) return c.peer_routes;
  return {"ping", "ssr", "jwt"};
}

double estimate_s(int runs, double idle_s, double warmup_s, double window_s) {
  return runs * (idle_s + warmup_s + window_s + kSetupS);
}

std::string reference_key(const plan_case& c) {
  return c.cost_profile + "|" +
         (c.extra_cost_us ? std::to_string(*c.extra_cost_us) : std::string("-"));
}

std::vector<plan_case> parse_plan(std::string_view json_text) {
  boost::system::error_code ec;
  json::value v = json::parse(json_text, ec);
  if (ec) throw plan_error("plan is not valid JSON: " + ec.message());
  if (!v.is_array()) throw plan_error("plan must be a JSON array of cases, got " + kind_name(v));
  std::vector<plan_case> cases;
  std::set<std::string> seen;
  std::set<std::string> inline_sat_refs;
  size_t index = 0;
  for (const auto& e : v.get_array()) {
    plan_case c = parse_case(e, index);
    std::string key = c.tag + "|" + c.mode + "|" + reference_key(c);
    if (!seen.insert(key).second)
      throw plan_error(where(index, c.tag) +
                       ": duplicate of an earlier case with the same tag, mode, "
                       "cost_profile and extra_cost_us (rows could not be told apart)");
    if (c.server_mode == "inline" && c.mode == "sat") inline_sat_refs.insert(reference_key(c));
    if (c.mode == "rate" && c.rate_per_route == 0 && !inline_sat_refs.count(reference_key(c)))
      throw plan_error(
          where(index, c.tag) +
          ": rate case without \"rate_per_route\" needs an earlier inline \"sat\" case with the "
          "same cost_profile and extra_cost_us to derive its rate from");
    cases.push_back(std::move(c));
    ++index;
  }
  if (cases.empty()) throw plan_error("plan has no cases");
  return cases;
}

std::vector<plan_case> load_plan_file(const std::string& path) {
  try {
    return parse_plan(read_file(path));
  } catch (const plan_error& e) {
    throw plan_error(path + ": " + e.what());
  }
}

json::value case_to_json(const plan_case& c) {
  json::object o;
  o["tag"] = c.tag;
  o["mode"] = c.mode;
  o["server_mode"] = c.server_mode;
  o["threads"] = c.threads;
  if (c.hosts != 1) o["hosts"] = c.hosts;
  if (c.fleet != 0) o["fleet"] = c.fleet;
  o["spin"] = c.spin;
  o["park"] = c.park;
  o["doorbell"] = c.doorbell;
  o["steal"] = c.steal;
  o["cost_profile"] = c.cost_profile;
  if (c.extra_cost_us) o["extra_cost_us"] = *c.extra_cost_us;
  if (!c.env.empty()) {
    json::object env;
    for (const auto& [k, val] : c.env) env[k] = val;
    o["env"] = std::move(env);
  }
  if (c.conns) o["conns"] = c.conns;
  if (c.rate_per_route > 0) o["rate_per_route"] = c.rate_per_route;
  if (!c.peer_command.empty()) o["command"] = c.peer_command;
  if (!c.peer_routes.empty()) {
    json::array r;
    for (const auto& name : c.peer_routes) r.push_back(json::value(name));
    o["routes"] = std::move(r);
  }
  return o;
}

json::array plan_to_json(const std::vector<plan_case>& cases) {
  json::array a;
  for (const auto& c : cases) a.push_back(case_to_json(c));
  return a;
}

std::map<std::string, std::string> server_env(const plan_case& c, const std::string& host,
                                              int port) {
  // A fixed secret like the reference benchmark's (JWT_SECRET=x): the server would otherwise
  // pick a random one and warn. The cost of signing does not depend on it.
  std::map<std::string, std::string> env = {{"JWT_SECRET", "x"}};
  for (const auto& [k, v] : c.env) env[k] = v;
  env["PORT"] = std::to_string(port);
  env["HOST"] = host;
  // An external peer reads none of knit's variables: PORT, HOST, the secret and the plan's env.
  if (is_peer_case(c)) return env;
  env["KNIT_MODE"] = c.server_mode;
  if (c.threads > 0) env["KNIT_THREADS"] = std::to_string(c.threads);
  if (c.hosts != 1) env["KNIT_HOSTS"] = std::to_string(c.hosts);
  if (!c.spin.empty()) env["KNIT_SPIN"] = c.spin;
  if (!c.park.empty()) env["KNIT_PARK"] = c.park;
  if (!c.doorbell.empty()) env["KNIT_DOORBELL"] = c.doorbell;
  if (!c.steal.empty()) env["KNIT_STEAL"] = c.steal;
  if (!c.cost_profile.empty()) env["KNIT_COST_PROFILE"] = c.cost_profile;
  if (c.extra_cost_us) {
    env["KNIT_SSR_COST_US"] = std::to_string(*c.extra_cost_us);
    env["KNIT_JWT_COST_US"] = std::to_string(*c.extra_cost_us);
  }
  return env;
}

}  // namespace knit::bench

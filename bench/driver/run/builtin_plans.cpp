// The built-in plans (--default, --full, --cost-sweep, --hosts-sweep, --hosts-sweep-small):
// bench/plans/NAME.json, embedded into knit-bench at build time, expanded over the cost
// profiles a run asks for.
#include "driver/run/builtin_plans.hpp"

#include <boost/json.hpp>
#include <fstream>
#include <set>
#include <sstream>

namespace knit::bench {
namespace {

namespace json = boost::json;

double number_field(const json::object& o, const std::string& ctx, const char* field) {
  const json::value* v = o.if_contains(field);
  if (!v || !v->is_number() || !(v->to_number<double>() >= 0))
    throw plan_error(ctx + ": field \"" + field + "\" must be a number >= 0");
  return v->to_number<double>();
}

int count_field(const json::object& o, const std::string& ctx, const char* field) {
  const json::value* v = o.if_contains(field);
  if (!v || !v->is_int64() || v->get_int64() < 1 || v->get_int64() > 100000)
    throw plan_error(ctx + ": field \"" + field + "\" must be an integer >= 1");
  return static_cast<int>(v->get_int64());
}

std::vector<std::string> default_profiles(const json::object& o, const std::string& ctx) {
  const json::value* v = o.if_contains("profiles");
  std::vector<std::string> out;
  if (v && v->is_array())
    for (const auto& p : v->get_array())
      if (p.is_string()) out.emplace_back(p.get_string());
  if (out.empty()) throw plan_error(ctx + ": field \"profiles\" must name cost profiles");
  return out;
}

}  // namespace

builtin_plan parse_builtin_plan(std::string_view name, std::string_view json_text,
                                const std::vector<std::string>& profiles) {
  const std::string ctx = "plan " + std::string(name);
  boost::system::error_code ec;
  json::value v = json::parse(json_text, ec);
  if (ec) throw plan_error(ctx + " is not valid JSON: " + ec.message());
  if (!v.is_object()) throw plan_error(ctx + " must be a JSON object");
  const json::object& o = v.get_object();
  static const std::set<std::string> known = {
      "about", "idle_s",   "warmup_s", "window_s",      "repeat",
      "conns", "profiles", "cases",    "gen_cpu_share", "separate_cpus"};
  for (const auto& kv : o)
    if (!known.count(std::string(kv.key())))
      throw plan_error(ctx + ": unknown field \"" + std::string(kv.key()) + "\"");
  const json::value* cases = o.if_contains("cases");
  if (!cases || !cases->is_array()) throw plan_error(ctx + ": field \"cases\" must be an array");

  builtin_plan p;
  p.name = std::string(name);
  p.idle_s = number_field(o, ctx, "idle_s");
  p.warmup_s = number_field(o, ctx, "warmup_s");
  p.window_s = number_field(o, ctx, "window_s");
  p.repeat = count_field(o, ctx, "repeat");
  p.conns = count_field(o, ctx, "conns");
  // Optional: where the generator runs by default, and whether it must not share the
  // server's CPUs (plan_sizing says why).
  if (o.contains("gen_cpu_share")) {
    p.gen_cpu_share = number_field(o, ctx, "gen_cpu_share");
    if (!(p.gen_cpu_share > 0 && p.gen_cpu_share < 1))
      throw plan_error(ctx + ": field \"gen_cpu_share\" must be between 0 and 1 (exclusive)");
  }
  if (const json::value* sep = o.if_contains("separate_cpus")) {
    if (!sep->is_bool()) throw plan_error(ctx + ": field \"separate_cpus\" must be a boolean");
    p.separate_cpus = sep->get_bool();
  }
  // Profile outermost: every case of one cost profile, then the next, as the plans were
  // always ordered, so repetitions interleave within a profile.
  json::array expanded;
  for (const auto& prof : profiles.empty() ? default_profiles(o, ctx) : profiles) {
    for (const auto& c : cases->get_array()) {
      if (!c.is_object() || c.get_object().contains("cost_profile"))
        throw plan_error(ctx +
                         ": cases are objects without \"cost_profile\" (it comes from "
                         "the run's profiles)");
      json::object one = c.get_object();
      one["cost_profile"] = prof;
      expanded.push_back(std::move(one));
    }
  }
  try {
    p.cases = parse_plan(json::serialize(expanded));
  } catch (const plan_error& e) {
    throw plan_error(ctx + ": " + e.what());
  }
  return p;
}

builtin_plan load_builtin_plan(std::string_view name, const std::vector<std::string>& profiles) {
  for (const auto& e : embedded_plans())
    if (e.name == name) return parse_builtin_plan(e.name, e.json, profiles);
  throw plan_error("no built-in plan named \"" + std::string(name) + "\"");
}

plan_file_contents read_plan_file(const std::string& path,
                                  const std::vector<std::string>& profiles) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  boost::system::error_code ec;
  const json::value v = json::parse(text.str(), ec);
  if (!in || ec || !v.is_object()) {
    // An array of cases, or something load_plan_file explains (missing, not JSON, ...).
    std::vector<plan_case> cases = load_plan_file(path);
    if (!profiles.empty())
      throw plan_error(path +
                       ": --profiles applies to built-in plans and plan objects only, "
                       "not to an array of cases");
    return {std::move(cases), std::nullopt};
  }
  builtin_plan p = parse_builtin_plan(path, text.str(), profiles);
  return {std::move(p.cases), static_cast<const plan_sizing&>(p)};
}

}  // namespace knit::bench

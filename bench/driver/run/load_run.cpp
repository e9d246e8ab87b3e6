// knit-load as the driver uses it: the routes and bodies, the command line, running
// it pinned and with a deadline, and reading its JSON.
#include "driver/run/load_run.hpp"

#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "driver/run/numfmt.hpp"
#include "driver/system/interrupt.hpp"
#include "driver/system/spawn.hpp"

namespace knit::bench {
namespace {

namespace json = boost::json;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double need(const json::object& o, const char* key, const std::string& ctx) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_number())
    throw std::runtime_error("knit-load JSON: " + ctx + "." + key + " missing or not a number");
  return v->to_number<double>();
}

std::optional<double> maybe(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_number()) return std::nullopt;
  return v->to_number<double>();
}

const json::object& obj(const json::object& o, const char* key, const std::string& ctx) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_object())
    throw std::runtime_error("knit-load JSON: " + ctx + "." + key + " missing or not an object");
  return v->get_object();
}

}  // namespace

const char* const kSsrBody =
    R"({"name":"Ari","plan":"pro","bio":"Building on Knitting","projects":17})";
const char* const kJwtBody =
    R"({"user":{"id":"u_42","email":"ari@example.com","role":"admin"},"ttlSec":900})";

void write_bodies(const std::string& dir) {
  for (auto [name, body] : {std::pair{"ssr.json", kSsrBody}, std::pair{"jwt.json", kJwtBody}}) {
    std::ofstream out(dir + "/" + name, std::ios::binary | std::ios::trunc);
    out << body;
    if (!out) throw std::runtime_error("cannot write " + dir + "/" + name);
  }
}

std::vector<load_route> standard_routes(int conns, double rate_per_route,
                                        const std::string& body_dir) {
  return {
      {"ping", "GET", "/ping", conns, rate_per_route, ""},
      {"ssr", "POST", "/ssr", conns, rate_per_route, body_dir + "/ssr.json"},
      {"jwt", "POST", "/jwt", conns, rate_per_route, body_dir + "/jwt.json"},
  };
}

std::vector<std::string> load_argv(const load_spec& s) {
  std::vector<std::string> a = {s.exe,
                                "--host",
                                s.host,
                                "--port",
                                std::to_string(s.port),
                                "--duration",
                                seconds_text(s.duration_s)};
  if (s.threads > 0) {
    a.push_back("--threads");
    a.push_back(std::to_string(s.threads));
  }
  if (s.timeout_ms > 0) {
    a.push_back("--timeout-ms");
    a.push_back(std::to_string(s.timeout_ms));
  }
  a.push_back("--json");
  a.push_back(s.json_path);
  for (const auto& r : s.routes) {
    // NAME:METHOD:PATH:CONNS[:RATE[:BODYFILE]]; RATE 0 = closed loop.
    std::string spec = r.name + ":" + r.method + ":" + r.path + ":" + std::to_string(r.conns);
    if (r.rate > 0 || !r.body_file.empty()) {
      spec += ':';
      spec += shortest(r.rate > 0 ? py_round(r.rate, 2) : 0.0);
    }
    if (!r.body_file.empty()) {
      // The body file is the last field; a ':' in it would be read as a separator.
      if (r.body_file.find(':') != std::string::npos)
        throw std::runtime_error("body file path must not contain ':': " + r.body_file);
      spec += ":" + r.body_file;
    }
    a.push_back("--route");
    a.push_back(spec);
  }
  return a;
}

load_result parse_load_json(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) throw std::runtime_error("knit-load JSON: not a JSON object");
  const auto& o = v.get_object();
  load_result r;
  r.duration_s = maybe(o, "duration_s").value_or(0);
  r.gen_cpu_s = maybe(o, "gen_cpu_s");
  r.gen_cores = maybe(o, "gen_cores");
  for (const auto& kv : obj(o, "routes", "")) {
    std::string name(kv.key());
    std::string ctx = "routes." + name;
    if (!kv.value().is_object())
      throw std::runtime_error("knit-load JSON: " + ctx + " is not an object");
    const auto& ro = kv.value().get_object();
    load_route_result rr;
    const auto& sum = obj(ro, "summary", ctx);
    rr.rps = need(sum, "requestsPerSec", ctx + ".summary");
    rr.success_rate = maybe(sum, "successRate").value_or(1.0);
    rr.requests = maybe(sum, "requests").value_or(0);
    rr.successes = maybe(sum, "successes").value_or(0);
    rr.errors = maybe(sum, "errors").value_or(0);
    const auto& lat = obj(ro, "latencyPercentiles", ctx);
    rr.p50 = need(lat, "p50", ctx + ".latencyPercentiles");
    rr.p99 = need(lat, "p99", ctx + ".latencyPercentiles");
    rr.p90 = maybe(lat, "p90").value_or(0);
    rr.p999 = maybe(lat, "p99.9").value_or(0);
    rr.max = maybe(lat, "max").value_or(0);
    if (auto* sc = ro.if_contains("statusCodeDistribution"); sc && sc->is_object())
      for (const auto& s : sc->get_object())
        if (s.value().is_number())
          rr.status_codes[std::string(s.key())] = s.value().to_number<double>();
    if (auto* rate = ro.if_contains("rate"); rate && rate->is_object()) {
      const auto& ra = rate->get_object();
      rr.rate_target = maybe(ra, "target");
      rr.rate_achieved = maybe(ra, "achieved");
      if (auto* m = ra.if_contains("met"); m && m->is_bool()) rr.rate_met = m->get_bool();
    }
    r.routes[name] = rr;
  }
  return r;
}

std::string file_tail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  if (s.size() > max_bytes) s = "..." + s.substr(s.size() - max_bytes);
  return s;
}

void run_generator(const std::string& exe, std::vector<std::string> argv,
                   const std::vector<int>& cpus, const std::string& log_path, double deadline_s,
                   const std::string& what) {
  spawn_spec sp;
  sp.exe = exe;
  sp.argv = std::move(argv);
  sp.env = child_environment({});
  sp.output_path = log_path;
  sp.cpus = cpus;
  pid_t pid = spawn_process(sp);
  auto start = std::chrono::steady_clock::now();
  std::optional<exit_status> st;
  while (!(st = reap_nohang(pid))) {
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed > deadline_s || interrupted()) {
      stop_process(pid, 2.0);
      throw std::runtime_error(what + " " +
                               (elapsed > deadline_s
                                    ? "did not finish within " + seconds_text(deadline_s) + " s"
                                    : std::string("interrupted")) +
                               " (stopped PID " + std::to_string(pid) + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!st->exited || st->code != 0)
    throw std::runtime_error(what + " failed (" + st->text() + "): " + file_tail(sp.output_path));
}

load_result run_load(const load_spec& spec, const std::vector<int>& cpus,
                     const std::string& log_path) {
  std::remove(spec.json_path.c_str());
  run_generator(spec.exe, load_argv(spec), cpus, log_path, spec.duration_s + 30.0, "knit-load");
  try {
    return parse_load_json(slurp(spec.json_path));
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string(e.what()) + " [" + spec.json_path + "]");
  }
}

}  // namespace knit::bench

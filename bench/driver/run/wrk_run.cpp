// wrk with a pipelining script: the command line, running it pinned and with a deadline, and
// reading the line of figures the script prints when it is done.
#include "driver/run/wrk_run.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "driver/system/spawn.hpp"

namespace knit::bench {
namespace {

namespace json = boost::json;

// What done() prints before its JSON, so the line is found among wrk's own output.
constexpr std::string_view kMarker = "knit-bench-wrk ";

// init() gets the arguments after "--" (the depth); request() returns the whole batch, so
// each round trip writes `depth` requests at once and wrk counts each response. done() runs
// once, after every thread: wrk's summary (microseconds) as one JSON line. Of the latencies only
// the slowest batch: wrk corrects its histogram for coordinated omission assuming one request
// per round trip (its interval is the window over the responses per connection, 16 times too
// short here), which fills it with made-up samples, so its percentiles come out wrong (measured:
// a p99 under its own p90, or 0).
constexpr const char* kScript = R"lua(-- Written by knit-bench (bench/driver/run/wrk_run.cpp).
-- wrk -s THIS URL -- DEPTH: DEPTH pipelined GETs of the URL's path per round trip.
local depth = 16
local req

init = function(args)
  depth = tonumber(args[1]) or depth
  req = string.rep(wrk.format(nil, wrk.path), depth)
end

request = function()
  return req
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'knit-bench-wrk {"duration_us":%.0f,"requests":%.0f,"bytes":%.0f,' ..
    '"errors":{"connect":%.0f,"read":%.0f,"write":%.0f,"status":%.0f,"timeout":%.0f},' ..
    '"latency_us":{"max":%.0f}}\n',
    summary.duration, summary.requests, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout, latency.max))
end
)lua";

double number(const json::object& o, const char* key, const std::string& ctx) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_number())
    throw std::runtime_error("wrk figures: " + ctx + key + " missing or not a number");
  return v->to_number<double>();
}

const json::object& object(const json::object& o, const char* key) {
  const json::value* v = o.if_contains(key);
  if (!v || !v->is_object())
    throw std::runtime_error(std::string("wrk figures: ") + key + " missing or not an object");
  return v->get_object();
}

double children_cpu_s() {
  rusage ru{};
  ::getrusage(RUSAGE_CHILDREN, &ru);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

}  // namespace

std::string find_wrk() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string exe = (dir.empty() ? "." : dir) + "/wrk";
    if (::access(exe.c_str(), X_OK) == 0) return exe;
  }
  return "";
}

std::string write_wrk_script(const std::string& dir) {
  const std::string path = dir + "/wrk_pipeline.lua";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << kScript;
  if (!out) throw std::runtime_error("cannot write " + path);
  return path;
}

std::vector<std::string> wrk_argv(const wrk_spec& s) {
  const long seconds = std::max(1L, static_cast<long>(std::ceil(s.duration_s)));
  return {s.exe,
          "-t",
          std::to_string(s.threads),
          "-c",
          std::to_string(std::max(s.conns, s.threads)),
          "-d",
          std::to_string(seconds) + "s",
          "-s",
          s.script_path,
          "http://" + s.host + ":" + std::to_string(s.port) + "/" + kPipelinedRoute,
          "--",
          std::to_string(kPipelineDepth)};
}

load_result parse_wrk_output(std::string_view output) {
  const size_t at = output.rfind(kMarker);
  if (at == std::string_view::npos)
    throw std::runtime_error("wrk's output has no \"knit-bench-wrk\" line (did the script run?)");
  std::string_view line = output.substr(at + kMarker.size());
  line = line.substr(0, line.find('\n'));
  boost::system::error_code ec;
  json::value v = json::parse(line, ec);
  if (ec || !v.is_object()) throw std::runtime_error("wrk figures: not a JSON object");
  const json::object& o = v.get_object();
  const double duration_s = number(o, "duration_us", "") / 1e6;
  const double requests = number(o, "requests", "");
  const json::object& errors = object(o, "errors");
  const json::object& lat = object(o, "latency_us");
  if (!(duration_s > 0)) throw std::runtime_error("wrk figures: duration_us is not positive");

  load_route_result r;
  r.requests = requests;
  const double refused = number(errors, "status", "errors.");
  r.successes = std::max(0.0, requests - refused);
  r.errors = refused + number(errors, "connect", "errors.") + number(errors, "read", "errors.") +
             number(errors, "write", "errors.") + number(errors, "timeout", "errors.");
  r.rps = requests / duration_s;
  r.success_rate = requests > 0 ? r.successes / requests : 0;
  // p50 to p99.9 stay 0: not measured (kScript says why).
  r.max = number(lat, "max", "latency_us.") / 1e6;

  load_result out;
  out.duration_s = duration_s;
  out.routes[kPipelinedRoute] = r;
  return out;
}

load_result run_wrk(const wrk_spec& spec, const std::vector<int>& cpus,
                    const std::string& log_path) {
  std::remove(log_path.c_str());  // the figures are read back from it: no older run's
  const double cpu0 = children_cpu_s();
  run_generator(spec.exe, wrk_argv(spec), cpus, log_path, std::ceil(spec.duration_s) + 30.0, "wrk");
  const double cpu = children_cpu_s() - cpu0;
  try {
    load_result r = parse_wrk_output(file_tail(log_path, 1 << 20));
    r.gen_cpu_s = cpu;
    if (r.duration_s > 0) r.gen_cores = cpu / r.duration_s;
    return r;
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string(e.what()) + " [" + log_path + "]");
  }
}

}  // namespace knit::bench

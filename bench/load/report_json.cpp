// The result JSON: whole-run fields plus one oha-shaped object per route.
#include "report_json.hpp"

#include <string>

namespace knit_load {
namespace {

double seconds(std::uint64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace

boost::json::object percentiles_json(const latency_histogram& h) {
  boost::json::object o;
  o["p50"] = seconds(h.percentile(50));
  o["p90"] = seconds(h.percentile(90));
  o["p99"] = seconds(h.percentile(99));
  o["p99.9"] = seconds(h.percentile(99.9));
  o["max"] = seconds(h.max());
  return o;
}

boost::json::object route_json(const route_result& r, double duration_s) {
  const route_load_stats& s = r.stats;
  const bool open = r.spec.open_loop();
  boost::json::object o;
  o["method"] = r.spec.method;
  o["path"] = r.spec.path;
  o["connections"] = r.spec.connections;
  o["mode"] = open ? "open" : "closed";

  boost::json::object summary;
  summary["requestsPerSec"] = duration_s > 0 ? static_cast<double>(s.requests) / duration_s : 0.0;
  // 2xx over completed responses; errors (no response at all) are counted separately.
  summary["successRate"] =
      s.requests > 0 ? static_cast<double>(s.successes) / static_cast<double>(s.requests) : 0.0;
  summary["total"] = duration_s;
  summary["requests"] = s.requests;
  summary["successes"] = s.successes;
  summary["non2xx"] = s.requests - s.successes;
  summary["errors"] = s.errors();
  summary["timeouts"] = s.timeouts;
  summary["sent"] = s.sent;
  summary["inFlightAtEnd"] = s.in_flight_at_end;
  summary["slowest"] = seconds(s.latency.max());
  summary["fastest"] = seconds(s.latency.min());
  summary["average"] = s.latency.mean() / 1e9;
  o["summary"] = std::move(summary);

  boost::json::object codes;
  for (std::size_t code = 0; code < s.status_counts.size(); ++code) {
    if (s.status_counts[code] != 0) codes[std::to_string(code)] = s.status_counts[code];
  }
  o["statusCodeDistribution"] = std::move(codes);

  o["errorDistribution"] = boost::json::object{{"connect", s.connect_errors},
                                               {"read", s.read_errors},
                                               {"timeout", s.timeouts},
                                               {"parse", s.parse_errors}};

  o["latencyPercentiles"] = percentiles_json(s.latency);
  if (open) {
    o["rate"] = boost::json::object{{"target", r.target_rate},
                                    {"achieved", r.achieved_rate},
                                    {"met", r.rate_met},
                                    {"backlog", s.backlog_at_end}};
    o["uncorrectedLatencyPercentiles"] = percentiles_json(s.uncorrected);
  }
  return o;
}

boost::json::object to_json(const run_result& result) {
  boost::json::object o;
  o["tool"] = "knit-load";
  o["version"] = 1;
  o["host"] = result.host;
  o["port"] = result.port;
  o["duration_s"] = result.duration_s;
  o["threads"] = result.threads;
  o["gen_cpu_s"] = result.gen_cpu_s;
  o["gen_cores"] = result.gen_cores();
  boost::json::object routes;
  for (const route_result& r : result.routes) {
    routes[r.spec.name] = route_json(r, result.duration_s);
  }
  o["routes"] = std::move(routes);
  return o;
}

}  // namespace knit_load

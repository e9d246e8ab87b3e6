// The human-readable summary: one block per route, latencies in milliseconds.
#include "report_text.hpp"

#include <iomanip>
#include <ostream>

namespace knit_load {
namespace {

void print_percentiles(std::ostream& out, const char* label, const latency_histogram& h) {
  auto ms = [](std::uint64_t ns) { return static_cast<double>(ns) / 1e6; };
  out << "    " << label << " ms: p50 " << ms(h.percentile(50)) << "  p90 " << ms(h.percentile(90))
      << "  p99 " << ms(h.percentile(99)) << "  p99.9 " << ms(h.percentile(99.9)) << "  max "
      << ms(h.max()) << "\n";
}

}  // namespace

void print_summary(std::ostream& out, const run_result& result) {
  const auto flags = out.flags();
  out << std::fixed << std::setprecision(2);
  out << "knit-load " << result.host << ":" << result.port << "  " << result.duration_s << " s  "
      << result.threads << " thread(s)  generator CPU " << result.gen_cpu_s << " s ("
      << result.gen_cores() << " cores)\n";
  for (const route_result& r : result.routes) {
    const route_load_stats& s = r.stats;
    const double rps = static_cast<double>(s.requests) / result.duration_s;
    const double ok =
        s.requests ? 100.0 * static_cast<double>(s.successes) / static_cast<double>(s.requests)
                   : 0.0;
    out << r.spec.name << "  " << r.spec.method << " " << r.spec.path << "  "
        << (r.spec.open_loop() ? "open" : "closed") << "  c=" << r.spec.connections << "\n";
    out << "    " << rps << " req/s  " << s.requests << " responses  " << ok << "% 2xx  "
        << s.errors() << " errors (connect " << s.connect_errors << ", read " << s.read_errors
        << ", timeout " << s.timeouts << ", parse " << s.parse_errors << ")  " << s.in_flight_at_end
        << " in flight at end\n";
    out << "    status:";
    for (std::size_t code = 0; code < s.status_counts.size(); ++code) {
      if (s.status_counts[code] != 0) out << " " << code << "=" << s.status_counts[code];
    }
    out << "\n";
    if (r.spec.open_loop()) {
      out << "    rate: target " << r.target_rate << "  achieved " << r.achieved_rate
          << "  backlog " << s.backlog_at_end << (r.rate_met ? "  (met)" : "  (NOT MET)") << "\n";
      print_percentiles(out, "latency (from intended send)", s.latency);
      print_percentiles(out, "latency (from actual send)  ", s.uncorrected);
    } else {
      print_percentiles(out, "latency", s.latency);
    }
  }
  out.flags(flags);
}

}  // namespace knit_load

// A stand-in for knit-load in driver tests: accepts its command line, waits out the
// duration, and writes JSON in knit-load's format with fixed, recognisable numbers.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  std::string json_path;
  double duration = 1;
  std::vector<std::pair<std::string, double>> routes;  // name, rate
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::string v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--json") json_path = v, ++i;
    else if (a == "--duration") duration = std::atof(v.c_str()), ++i;
    else if (a == "--route") {
      // NAME:METHOD:PATH:CONNS[:RATE[:BODYFILE]]
      std::vector<std::string> f;
      size_t start = 0, colon;
      while ((colon = v.find(':', start)) != std::string::npos && f.size() < 5) {
        f.push_back(v.substr(start, colon - start));
        start = colon + 1;
      }
      f.push_back(v.substr(start));
      if (f.size() < 4) {
        std::fprintf(stderr, "bad --route %s\n", v.c_str());
        return 2;
      }
      if (f.size() >= 6) {
        std::ifstream body(f[5]);
        if (!body) {
          std::fprintf(stderr, "missing body file %s\n", f[5].c_str());
          return 2;
        }
      }
      routes.push_back({f[0], f.size() >= 5 ? std::atof(f[4].c_str()) : 0.0});
      ++i;
    } else if (a == "--host" || a == "--port" || a == "--threads" || a == "--timeout-ms") {
      ++i;
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (std::getenv("FAKE_LOAD_FAIL")) return 3;
  std::this_thread::sleep_for(std::chrono::duration<double>(duration));
  // ostringstream rather than string concatenation: GCC 12 raises a bogus -Wrestrict on the latter.
  std::ostringstream o;
  o << "{\"tool\":\"knit-load\",\"duration_s\":" << duration
    << ",\"gen_cpu_s\":0.05,\"gen_cores\":0.25,\"routes\":{";
  double rps = 1000.126;
  for (size_t i = 0; i < routes.size(); ++i) {
    const auto& [name, rate] = routes[i];
    double r = rate > 0 ? rate : rps;
    o << (i ? "," : "") << "\"" << name << "\":{\"summary\":{\"requestsPerSec\":" << r
      << ",\"successRate\":1.0,\"requests\":100,\"successes\":100,\"errors\":0},"
         "\"statusCodeDistribution\":{\"200\":100},"
         "\"latencyPercentiles\":{\"p50\":0.0012345,\"p90\":0.002,\"p99\":0.0056789,\"p99.9\":0."
         "009,\"max\":0.012}";
    if (rate > 0)
      o << ",\"rate\":{\"target\":" << rate << ",\"achieved\":" << rate
        << ",\"met\":true},\"uncorrectedLatencyPercentiles\":{\"p50\":0.001,\"p99\":0.005}";
    o << "}";
    rps += 1000;
  }
  o << "}}\n";
  const std::string out = o.str();
  if (json_path == "-") {
    std::fputs(out.c_str(), stdout);
  } else {
    std::ofstream f(json_path);
    f << out;
  }
  return 0;
}

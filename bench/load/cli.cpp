// Command-line parsing for knit-load: flags (CLI11), route specs, body files.
#include "cli.hpp"

#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "common/cli_parse.hpp"

namespace knit_load {
namespace {

template <typename T>
T parse_integer(std::string_view text, std::string_view what, T min, T max) {
  long long v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || ptr != text.data() + text.size() || v < static_cast<long long>(min) ||
      v > static_cast<long long>(max)) {
    throw cli_error(std::string(what) + ": expected an integer in [" + std::to_string(min) + ", " +
                    std::to_string(max) + "], got '" + std::string(text) + "'");
  }
  return static_cast<T>(v);
}

double parse_double(std::string_view text, std::string_view what, double min) {
  // std::from_chars for double is in libstdc++ 11+, and unlike strtod ignores the locale.
  double v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || ptr != text.data() + text.size() || !std::isfinite(v) || v < min) {
    throw cli_error(std::string(what) + ": expected a number >= " + std::to_string(min) +
                    ", got '" + std::string(text) + "'");
  }
  return v;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw cli_error("cannot read body file '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

route_spec parse_route(std::string_view spec) {
  // Split on the first five colons only, so a body file path may itself contain ':'.
  std::vector<std::string_view> parts;
  std::string_view rest = spec;
  while (parts.size() < 5) {
    const std::size_t colon = rest.find(':');
    if (colon == std::string_view::npos) break;
    parts.push_back(rest.substr(0, colon));
    rest.remove_prefix(colon + 1);
  }
  parts.push_back(rest);
  if (parts.size() < 4) {
    throw cli_error("--route '" + std::string(spec) +
                    "': expected NAME:METHOD:PATH:CONNS[:RATE[:BODYFILE]]");
  }
  route_spec r;
  r.name = parts[0];
  r.method = parts[1];
  r.path = parts[2];
  if (r.name.empty()) throw cli_error("--route '" + std::string(spec) + "': empty name");
  if (r.method.empty()) throw cli_error("--route '" + std::string(spec) + "': empty method");
  for (char c : r.method) {
    if (c < 'A' || c > 'Z') throw cli_error("--route: method must be upper-case letters");
  }
  if (r.path.empty() || r.path.front() != '/') {
    throw cli_error("--route '" + std::string(spec) + "': path must start with '/'");
  }
  for (char c : r.path) {
    if (c == ' ' || c == '\r' || c == '\n') throw cli_error("--route: path contains whitespace");
  }
  r.connections = parse_integer<std::uint32_t>(parts[3], "--route CONNS", 1, 100000);
  if (parts.size() > 4 && !parts[4].empty()) r.rate = parse_double(parts[4], "--route RATE", 0.0);
  if (parts.size() > 5) r.body_file = parts[5];
  return r;
}

load_config parse_cli(const std::vector<std::string>& args) {
  load_config cfg;
  std::vector<std::string> routes;
  CLI::App app{"knit-load: a multi-route HTTP/1.1 load generator (closed and open loop).",
               "knit-load"};
  // A flag given twice keeps its last value, as the hand-written parser did.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--host", cfg.host, "server address")
      ->capture_default_str()
      ->check([](const std::string& v) { return v.empty() ? "empty" : ""; });
  app.add_option("--port", cfg.port, "server port")
      ->capture_default_str()
      ->check(CLI::Range(1, 65535));
  app.add_option("--duration", cfg.duration_s, "SECONDS of load (fractions allowed)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", cfg.threads, "generator threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--json", cfg.json_path, "write the result JSON to PATH (-: stdout)")
      ->check([](const std::string& v) { return v.empty() ? "empty path" : ""; });
  app.add_option("--timeout-ms", cfg.timeout_ms, "connect and response timeout in ms")
      ->capture_default_str()
      ->check(CLI::Range(1, 3'600'000));
  app.add_option("--route", routes,
                 "NAME:METHOD:PATH:CONNS[:RATE[:BODYFILE]] (repeatable, at least one). RATE: "
                 "requests/s for the route (open loop); 0 or absent: closed loop. BODYFILE: "
                 "request body, sent with content-type: application/json")
      ->required()
      ->take_all()
      ->allow_extra_args(false);
  app.footer(
      "Flags take their value as --flag VALUE or --flag=VALUE. Exit status: 0 done, "
      "1 run failed, 2 bad arguments.");
  knit::bench_cli::parse_args(app, args, "knit-load: ", "\nrun knit-load --help for usage");
  if (!std::isfinite(cfg.duration_s)) throw cli_error("--duration: expected a finite number");
  std::set<std::string> names;
  for (const std::string& spec : routes) {
    route_spec r = parse_route(spec);
    if (!names.insert(r.name).second) throw cli_error("--route: duplicate name '" + r.name + "'");
    if (!r.body_file.empty()) r.body = read_file(r.body_file);
    cfg.routes.push_back(std::move(r));
  }
  return cfg;
}

}  // namespace knit_load

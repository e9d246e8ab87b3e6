// Command-line parsing for knit-load: flags, route specs, body files.
#include "cli.hpp"

#include <charconv>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

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

std::string usage() {
  return "usage: knit-load [--host 127.0.0.1] [--port 3000] [--duration SECONDS]\n"
         "                 [--threads T] [--json PATH|-] [--timeout-ms MS]\n"
         "                 --route NAME:METHOD:PATH:CONNS[:RATE[:BODYFILE]] ...\n"
         "  RATE: requests/s for the route (open loop); 0 or absent: closed loop.\n"
         "  BODYFILE: request body, sent with content-type: application/json.\n";
}

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
  std::set<std::string> names;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    bool has_value = false;
    // Accept both "--flag value" and "--flag=value".
    if (const std::size_t eq = flag.find('=');
        flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
      has_value = true;
    }
    if (flag == "--help" || flag == "-h") throw cli_error(usage());
    auto take = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= args.size()) throw cli_error(flag + ": missing value");
      return args[++i];
    };
    if (flag == "--host") {
      cfg.host = take();
      if (cfg.host.empty()) throw cli_error("--host: empty");
    } else if (flag == "--port") {
      cfg.port = parse_integer<std::uint16_t>(take(), "--port", 1, 65535);
    } else if (flag == "--duration") {
      cfg.duration_s = parse_double(take(), "--duration", 0.0);
      if (cfg.duration_s <= 0.0) throw cli_error("--duration: must be > 0");
    } else if (flag == "--threads") {
      cfg.threads = parse_integer<std::uint32_t>(take(), "--threads", 1, 1024);
    } else if (flag == "--json") {
      cfg.json_path = take();
      if (cfg.json_path.empty()) throw cli_error("--json: empty path");
    } else if (flag == "--timeout-ms") {
      cfg.timeout_ms = parse_integer<std::uint32_t>(take(), "--timeout-ms", 1, 3'600'000);
    } else if (flag == "--route") {
      route_spec r = parse_route(take());
      if (!names.insert(r.name).second) throw cli_error("--route: duplicate name '" + r.name + "'");
      if (!r.body_file.empty()) r.body = read_file(r.body_file);
      cfg.routes.push_back(std::move(r));
    } else {
      throw cli_error("unknown argument '" + args[i] + "'\n" + usage());
    }
  }
  if (cfg.routes.empty()) throw cli_error("at least one --route is required\n" + usage());
  return cfg;
}

}  // namespace knit_load

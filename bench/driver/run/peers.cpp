// External peers on the command line: --peer NAME=COMMAND and --peer-routes NAME=LIST
// become plan cases (server_mode "peer:NAME") run with the same load as knit's.
#include "driver/run/peers.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

namespace knit::bench {
namespace {

bool valid_name(const std::string& s) {
  if (s.empty()) return false;
  for (char ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.'))
      return false;
  return true;
}

std::pair<std::string, std::string> split_eq(const std::string& arg, const char* flag) {
  auto eq = arg.find('=');
  if (eq == std::string::npos)
    throw plan_error(std::string(flag) + " needs NAME=VALUE, got \"" + arg + "\"");
  std::string name = arg.substr(0, eq);
  if (!valid_name(name))
    throw plan_error(std::string(flag) + ": peer name \"" + name +
                     "\" must be letters, digits, '_', '-' or '.'");
  return {name, arg.substr(eq + 1)};
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

}  // namespace

peer_spec parse_peer_arg(const std::string& arg) {
  auto [name, command] = split_eq(arg, "--peer");
  if (command.find_first_not_of(" \t") == std::string::npos)
    throw plan_error("--peer " + name + ": the command is empty");
  return {name, command, {}};
}

void apply_peer_routes(std::vector<peer_spec>& peers, const std::string& arg) {
  auto [name, list] = split_eq(arg, "--peer-routes");
  auto it =
      std::find_if(peers.begin(), peers.end(), [&](const peer_spec& p) { return p.name == name; });
  if (it == peers.end())
    throw plan_error("--peer-routes " + name + ": no --peer " + name + "=COMMAND before it");
  std::vector<std::string> routes;
  std::stringstream ss(list);
  std::string r;
  while (std::getline(ss, r, ',')) {
    if (r.empty()) continue;
    if (r != "ping" && r != "ssr" && r != "jwt")
      throw plan_error("--peer-routes " + name + ": unknown route \"" + r + "\" (ping, ssr, jwt)");
    if (std::find(routes.begin(), routes.end(), r) == routes.end()) routes.push_back(r);
  }
  if (routes.empty()) throw plan_error("--peer-routes " + name + ": name at least one route");
  it->routes = routes;
}

void add_peer_cases(std::vector<plan_case>& cases, const std::vector<peer_spec>& peers) {
  std::set<std::string> tags, names;
  // Scopes in first-seen order: (mode, cost profile, extra cost).
  std::vector<const plan_case*> scopes;
  for (const plan_case& c : cases) {
    tags.insert(c.tag);
    if (is_peer_case(c)) continue;
    bool seen = std::any_of(scopes.begin(), scopes.end(), [&](const plan_case* s) {
      return s->mode == c.mode && reference_key(*s) == reference_key(c);
    });
    if (!seen) scopes.push_back(&c);
  }
  std::vector<plan_case> added;
  for (const peer_spec& p : peers) {
    if (!names.insert(p.name).second) throw plan_error("--peer " + p.name + " is given twice");
    if (tags.count(p.name))
      throw plan_error("--peer " + p.name + ": the plan already has a case tagged \"" + p.name +
                       "\"");
    for (const plan_case* s : scopes) {
      plan_case c;
      c.tag = p.name;
      c.mode = s->mode;
      c.server_mode = "peer:" + p.name;
      c.cost_profile = s->cost_profile;
      c.extra_cost_us = s->extra_cost_us;
      c.rate_per_route = s->rate_per_route;  // an explicit rate, else derived like knit's
      c.peer_command = p.command;
      c.peer_routes = p.routes;
      added.push_back(std::move(c));
    }
  }
  cases.insert(cases.end(), added.begin(), added.end());
}

std::string peer_command_text(const std::string& command, const std::string& host, int port) {
  std::string s = command;
  replace_all(s, "{port}", std::to_string(port));
  replace_all(s, "{host}", host);
  return s;
}

}  // namespace knit::bench

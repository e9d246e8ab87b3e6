// External peers on the command line: --peer NAME=COMMAND and --peer-routes NAME=LIST
// become plan cases (server_mode "peer:NAME") run with the same load as knit's.
#pragma once

#include <string>
#include <vector>

#include "driver/run/plan.hpp"

namespace knit::bench {

struct peer_spec {
  std::string name;                 // the cases' tag; server_mode is "peer:" + name
  std::string command;              // run as /bin/sh -c COMMAND
  std::vector<std::string> routes;  // the routes it serves; empty = ping, ssr and jwt
};

// "NAME=COMMAND" (the first '=' separates). Throws plan_error on a bad name or an empty command.
peer_spec parse_peer_arg(const std::string& arg);

// "NAME=ping,ssr": the routes peer NAME serves (it is loaded on those only, so that its
// 404s never count as throughput). Throws plan_error on an unknown peer or route.
void apply_peer_routes(std::vector<peer_spec>& peers, const std::string& arg);

// Adds one case per peer for every distinct (mode, cost_profile, extra_cost_us) in the
// plan, after the plan's own cases, so repetitions interleave them with knit's and each
// offers the same load (rate cases derive their rate from the same inline case). Throws
// plan_error when a peer's name is already a tag in the plan or two peers share a name.
void add_peer_cases(std::vector<plan_case>& cases, const std::vector<peer_spec>& peers);

// The command as run: every "{port}" and "{host}" replaced.
std::string peer_command_text(const std::string& command, const std::string& host, int port);

}  // namespace knit::bench

// Command-line parsing for knit-load (the flag set the benchmark driver depends on).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"

namespace knit_load {

struct cli_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses "NAME:METHOD:PATH:CONNS[:RATE[:BODYFILE]]". Does not read the body file.
route_spec parse_route(std::string_view spec);

// Parses the arguments after argv[0]; reads body files. Throws cli_error on any problem.
// At least one --route is required.
load_config parse_cli(const std::vector<std::string>& args);

std::string usage();

}  // namespace knit_load

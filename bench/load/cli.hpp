// Command-line parsing for knit-load (the flag set the benchmark driver depends on).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"

namespace knit_load {

// Bad arguments: what() says what is wrong (main prints it and exits 2).
struct cli_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// --help or -h: what() is the generated help (main prints it on stdout and exits 0).
struct cli_help : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Parses "NAME:METHOD:PATH:CONNS[:RATE[:BODYFILE]]". Does not read the body file.
route_spec parse_route(std::string_view spec);

// Parses the arguments after argv[0] (--flag VALUE or --flag=VALUE); reads body files.
// Throws cli_error on any problem, cli_help for --help. At least one --route is required.
load_config parse_cli(const std::vector<std::string>& args);

}  // namespace knit_load

// Command-line parsing for knit-load (the flag set the benchmark driver depends on).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/cli_errors.hpp"
#include "config.hpp"

namespace knit_load {

using knit::bench_cli::cli_error;  // bad arguments (exit 2)
using knit::bench_cli::cli_help;   // --help or -h (stdout, exit 0)

// Parses "NAME:METHOD:PATH:CONNS[:RATE[:BODYFILE]]". Does not read the body file.
route_spec parse_route(std::string_view spec);

// Parses the arguments after argv[0] (--flag VALUE or --flag=VALUE); reads body files.
// Throws cli_error on any problem, cli_help for --help. At least one --route is required.
load_config parse_cli(const std::vector<std::string>& args);

}  // namespace knit_load

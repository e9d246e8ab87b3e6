// knit-server's command line, parsed by CLI11 over the settings table: each row with a flag is
// an option (--threads 4, --threads=4), shown in --help under its group with its variable, what
// it accepts and its default. What no flag gave is taken from the row's environment variable
// (unset or empty: the default), so a flag wins over the variable.
//
// Why the variables are not read by CLI11's own envname(): it reads the process environment
// with getenv, which leaves the tests no seam to feed one, and after parsing it no longer says
// whether a value came from the flag or the variable, which --print-config reports.
#pragma once

#include <string>
#include <vector>

#include "config.hpp"
#include "settings/setting_values.hpp"

namespace knit_server {

// What the command line asks for. Every action but `run` prints and exits 0.
enum class command_action {
  run,
  help,               // --help, -h: the options, grouped
  version,            // --version: "knit-server 0.1.0"
  print_config,       // --print-config: each effective value and where it came from
  print_env_file,     // hidden: packaging/knit-server.default
  print_man_options,  // hidden: the man page's option list (packaging/knit-server.1)
  print_markdown,     // hidden: docs/configuration.md's table
};

struct command_line {
  command_action action = command_action::run;
  setting_values values;
};

// Parses `args` (without the program name), then fills from `getenv` every setting no flag
// gave. An unknown option, a stray argument or a flag without its value throws
// server_config_error naming it (with the closest known flag, if one is near); the values
// themselves are checked later, by build_settings.
command_line parse_command_line(const std::vector<std::string>& args, const env_lookup& getenv);

// The --help text: usage, the options by group, the environment-only settings, exit codes.
std::string help_text();

}  // namespace knit_server

// The one way knit-bench and knit-load hand their arguments to CLI11, so both read flags the
// same way (--flag VALUE or --flag=VALUE) and report problems the same way.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "common/cli_errors.hpp"

namespace knit::bench_cli {

// Parses `args` (argv after argv[0]) into `app`. Throws cli_help with the generated help for
// --help / -h, and cli_error with before + CLI11's message + after for anything CLI11 refuses.
inline void parse_args(CLI::App& app, const std::vector<std::string>& args,
                       const std::string& before = "", const std::string& after = "") {
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 pops from the back
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    throw cli_help(app.help());
  } catch (const CLI::ParseError& e) {
    throw cli_error(before + e.what() + after);
  }
}

}  // namespace knit::bench_cli

// What a command line of knit-bench or knit-load can end in besides its parsed options:
// bad arguments or a request for help (common/cli_parse.hpp throws both).
#pragma once

#include <stdexcept>

namespace knit::bench_cli {

// Bad arguments: what() says what is wrong (main prints it and exits 2).
struct cli_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// --help, -h (or `knit-bench help`): what() is the generated help (stdout, exit 0).
struct cli_help : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace knit::bench_cli

// Step 1 of knit-server's main: the configuration, from the command line and the environment,
// by the settings table. Answers --help, --version, --print-config (and the hidden printers of
// the generated files) itself; names each unknown KNIT_* variable on stderr; prints a bad
// value or an unknown option as "knit-server: NAME="value": expected ..." on stderr.
#pragma once

#include <optional>

#include "settings/server_settings.hpp"

namespace knit_server {

struct startup_settings {
  std::optional<server_settings> settings;  // set: the server runs with these
  int exit_code = 0;  // otherwise main returns this: 0 after a printing action, 2 after a
                      // bad configuration, 1 when the configuration cannot be built (no
                      // randomness for the JWT secret)
};

// Reads argv and the process environment. Nothing is bound or started here.
startup_settings read_settings(int argc, char** argv);

}  // namespace knit_server

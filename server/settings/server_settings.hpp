// Everything knit-server runs with, built from the settings table's values: the server's own
// configuration, auto mode's threshold, the knit pool's options and the worker processes'.
// Every value is checked here, in every mode (a typo is an error whichever mode the server
// happens to run), and so are the rules between settings (KNIT_ISOLATION=process needs
// KNIT_MODE=pooled, ...). A bad one throws server_config_error in setting_values.hpp's style.
#pragma once

#include <knit/options.hpp>
#include <knit/process_options.hpp>

#include "config.hpp"
#include "placement/offload_policy.hpp"
#include "settings/setting_values.hpp"

namespace knit_server {

struct server_settings {
  server_config cfg;
  offload_options offload;
  // The pool's options. pool.process is `process` in KNIT_ISOLATION=process, the library's
  // defaults otherwise (no worker process is started then). max_hosts leaves room for
  // KNIT_HOSTS loops beside the thread that builds the pool.
  knit::pool_options pool;
  knit::process_options process;
};

// Builds and checks every setting. May call RAND_bytes for the JWT secret (std::runtime_error
// if it fails: that is no configuration error).
server_settings build_settings(const setting_values& values);

// build_settings over the environment alone: the seams the unit tests feed a fake
// environment through.
server_config config_from_env(const env_lookup& getenv);
offload_options offload_options_from_env(const env_lookup& getenv);

}  // namespace knit_server

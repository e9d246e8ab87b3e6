// What each setting is in effect, read back from the structs the server runs with (not from
// the text it was given), so --print-config shows what the code does: a computed default
// (KNIT_SPIN, KNIT_MAX_QUEUE_WAIT_MS, KNIT_MEMORY_BUDGET_MB...) is shown as computed.
#pragma once

#include <string>

#include "settings/server_settings.hpp"
#include "settings/setting_values.hpp"

namespace knit_server {

// The row's value in `s`, spelt as its variable takes it ("pooled", "30000", "0,2,3"); empty
// for JWT_SECRET (never printed) and the hidden rows.
std::string effective_value(const setting& row, const server_settings& s);

// --print-config: one line per shown setting, by group,
//   KNIT_THREADS=4                          # env
// then where the value came from: default (with the rule, for a computed one), env, or
// flag --name. JWT_SECRET's line says whether it is given, never what it is.
std::string print_config_text(const setting_values& values, const server_settings& s);

}  // namespace knit_server

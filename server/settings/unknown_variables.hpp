// A KNIT_* variable that is no row of the settings table is a typo or a setting from another
// version (KNIT_THRADS=2 would otherwise start a server with the default silently): knit-server
// names each one at start-up, with the closest known name when one is near, and carries on.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace knit_server {

// One warning line per KNIT_ variable in `environment` ("NAME=value" entries, as in environ)
// that the table does not hold, e.g.
//   knit-server: warning: KNIT_THRADS is not a knit-server setting and is ignored (did you
//   mean KNIT_THREADS?)
// The table's hidden rows (test hooks, a removed setting) and the variables of knit's own
// tools (KNIT_FLEET_*, KNIT_BENCH_*, KNIT_ENV_FILE, ...) are known: never warned about.
std::vector<std::string> unknown_variable_warnings(std::span<const std::string> environment);

// The candidate closest to `name` by edit distance, if close enough to be a likely typo
// (at most a quarter of the name's length, and at least 1, edits); else empty.
std::string_view closest_name(std::string_view name, std::span<const std::string_view> candidates);

}  // namespace knit_server

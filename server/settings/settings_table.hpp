// knit-server's one table of settings: every command-line flag and environment variable the
// server reads, with its type, default, accepted values, one line of help, its group and, where
// the knit library's own default differs from the server's, why.
//
// Everything else is printed from it or checked against it: the parser (command_line.hpp) takes
// each row's flag, else its variable, else its default; --help, --print-config, the packaged
// environment file, the man page's option list and docs/configuration.md come from it
// (generated_files.hpp); a KNIT_* variable that is not a row is warned about at start-up
// (unknown_variables.hpp). Adding a setting is adding a row here, then reading it in
// server_settings.cpp.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace knit_server {

// The sections of --help, the environment file and the docs, in this order. `hidden` rows are
// read but never shown: test hooks, and a removed setting that is refused.
enum class setting_group { server, pool, process_workers, limits, stop, benchmark, hidden };

enum class setting_kind {
  number,     // a plain decimal integer in [lo, hi] (no sign, no spaces), or 0 when zero_means
              //   says what 0 does and lo > 0
  choice,     // one of the words in `choices`, spelt exactly
  on_off,     // 0 or 1
  address,    // an IPv4 or IPv6 literal, or localhost
  cpu_list,   // CPU numbers and ranges: 0,2,4-7
  text,       // any bytes (JWT_SECRET)
  removed,    // a setting that no longer exists: refused when set at all, even empty
  test_hook,  // read by a worker process, for the tests only (process_isolation.hpp)
};

struct setting {
  std::string_view env = {};   // the environment variable: KNIT_THREADS
  std::string_view flag = {};  // the flag: --threads; empty for a setting read from the environment
                               //   only (a secret does not belong on a command line)
  setting_group group = {};
  setting_kind kind = {};
  std::string_view unit = {};           // what --help shows after the flag: N, MS, US, MB, MODE...
  std::string_view default_value = {};  // as the variable would spell it; empty when the default is
                                        //   computed at start-up, which default_note then says
  std::string_view default_note = {};
  std::uint64_t lo = 0;  // number: the accepted range
  std::uint64_t hi = 0;
  std::string_view zero_means = {};  // number: what 0 does ("off", "no limit")
  std::string_view choices = {};     // choice: the accepted words, space-separated
  std::string_view help = {};        // one line: what it does
  std::string_view why = {};         // where knit's library default differs from the server's: why
};

// Every row, grouped in setting_group's order.
std::span<const setting> settings_table() noexcept;

// The row whose variable is `env`, or null.
const setting* find_setting(std::string_view env) noexcept;

// The row's position in settings_table().
std::size_t setting_index(const setting& row) noexcept;

// "Server", "Pool (knit workers)", ...: the section titles.
std::string_view group_title(setting_group group) noexcept;

// What the row accepts, as the error message and the docs say it after "expected":
// "an integer from 1 to 1024", "inline, pooled, asio, multi or auto", "0 or 1", ...
std::string accepted_text(const setting& row);

// accepted_text, and what 0 does where the range starts at 0 and the row says:
// "an integer from 0 to 1024 (0: no cap)".
std::string accepted_in_full(const setting& row);

// The default as the docs show it: the value, or the note when it is computed.
std::string default_text(const setting& row);

}  // namespace knit_server

// The text each setting was given and where it came from (a flag, the environment, or
// nothing: the table's default), and the typed reads that check it against its table row.
//
// One error style for every bad value, whichever setting and whichever source:
//   NAME="value": expected <what the row accepts>
// where NAME is the flag when the value came from one (--threads="x": ...), else the variable
// (KNIT_THREADS="x": ...). main prefixes "knit-server: " and exits 2.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config.hpp"
#include "settings/settings_table.hpp"

namespace knit_server {

enum class setting_origin { default_value, env, flag };

// "default", "env" or "flag": the word --print-config shows.
std::string_view to_string(setting_origin origin) noexcept;

struct given_value {
  std::string text;
  setting_origin origin = setting_origin::default_value;
};

class setting_values {
 public:
  setting_values();  // every setting at its default

  // Gives the setting `env` names (a row of the table) its text, from `origin`.
  void give(std::string_view env, std::string text, setting_origin origin);

  const given_value& get(std::string_view env) const;
  bool given(std::string_view env) const {
    return get(env).origin != setting_origin::default_value;
  }

  // How the setting was given, for a message: its flag when it came from one, else its
  // variable.
  std::string label(std::string_view env) const;

  // Throws server_config_error: label="text": expected `expected`.
  [[noreturn]] void reject(std::string_view env, std::string_view expected) const;

  // The typed reads: the given text, else the row's default, checked against the row; nullopt
  // when neither (a default computed by the caller). A bad text throws server_config_error.
  std::optional<std::uint64_t> number(std::string_view env) const;
  std::optional<std::string> word(std::string_view env) const;  // choice, address, text
  std::optional<bool> on_off(std::string_view env) const;
  std::optional<std::vector<int>> cpu_list(std::string_view env) const;

 private:
  const setting& row(std::string_view env) const;
  // The text to read: the given one, else the row's default; nullopt when both are empty.
  std::optional<std::string> text(std::string_view env) const;

  std::vector<given_value> values_;  // one per row of settings_table()
};

// The values from the environment alone (no command line): each row's variable, where it is
// set and not empty (unset and empty both mean the default; a removed row counts even empty).
setting_values values_from_env(const env_lookup& getenv);

}  // namespace knit_server

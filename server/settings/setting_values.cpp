// Given texts, their origins, and the checks of each kind of setting (setting_values.hpp).
#include "settings/setting_values.hpp"

#include <charconv>
#include <stdexcept>

#include <boost/asio/ip/address.hpp>
#include <knit/options.hpp>

#include "settings/text_layout.hpp"

namespace knit_server {

std::string_view to_string(setting_origin origin) noexcept {
  switch (origin) {
    case setting_origin::default_value: return "default";
    case setting_origin::env: return "env";
    case setting_origin::flag: return "flag";
  }
  return "?";
}

setting_values::setting_values() : values_(settings_table().size()) {}

const setting& setting_values::row(std::string_view env) const {
  const setting* found = find_setting(env);
  // A name that is not in the table is a bug in the server, never a user's mistake.
  if (!found) throw std::logic_error(cat("knit-server: no setting named ", env));
  return *found;
}

void setting_values::give(std::string_view env, std::string text, setting_origin origin) {
  values_[setting_index(row(env))] = given_value{std::move(text), origin};
}

const given_value& setting_values::get(std::string_view env) const {
  return values_[setting_index(row(env))];
}

std::string setting_values::label(std::string_view env) const {
  const setting& r = row(env);
  return std::string(get(env).origin == setting_origin::flag ? r.flag : r.env);
}

void setting_values::reject(std::string_view env, std::string_view expected) const {
  const given_value& value = get(env);
  const std::string shown = value.origin == setting_origin::default_value
                                ? std::string(row(env).default_value)
                                : value.text;
  throw server_config_error(cat(label(env), "=\"", shown, "\": expected ", expected));
}

std::optional<std::string> setting_values::text(std::string_view env) const {
  const given_value& value = get(env);
  if (value.origin != setting_origin::default_value && !value.text.empty()) return value.text;
  const setting& r = row(env);
  if (r.default_value.empty()) return std::nullopt;
  return std::string(r.default_value);
}

std::optional<std::uint64_t> setting_values::number(std::string_view env) const {
  const std::optional<std::string> t = text(env);
  if (!t) return std::nullopt;
  const setting& r = row(env);
  // A plain decimal integer: from_chars takes no sign, no space, no "0x"; the whole text must
  // be the number.
  std::uint64_t value = 0;
  const char* last = t->data() + t->size();
  const auto [end, ec] = std::from_chars(t->data(), last, value);
  const bool zero_ok = value == 0 && !r.zero_means.empty();
  if (ec != std::errc{} || end != last || ((value < r.lo || value > r.hi) && !zero_ok)) {
    reject(env, accepted_text(r));
  }
  return value;
}

std::optional<std::string> setting_values::word(std::string_view env) const {
  std::optional<std::string> t = text(env);
  if (!t) return std::nullopt;
  const setting& r = row(env);
  if (r.kind == setting_kind::choice) {
    std::string_view rest = r.choices;
    bool known = false;
    while (!rest.empty() && !known) {
      const std::size_t space = rest.find(' ');
      known = rest.substr(0, space) == *t;
      rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
    }
    if (!known) reject(env, accepted_text(r));
  } else if (r.kind == setting_kind::address && *t != "localhost") {
    // Literals only: resolving a name would make the bind address depend on DNS, and the
    // benchmark must know exactly which interface it measures.
    boost::system::error_code ec;
    boost::asio::ip::make_address(*t, ec);
    if (ec) reject(env, accepted_text(r));
  }
  return t;
}

std::optional<bool> setting_values::on_off(std::string_view env) const {
  const std::optional<std::string> t = text(env);
  if (!t) return std::nullopt;
  if (*t != "0" && *t != "1") reject(env, accepted_text(row(env)));
  return *t == "1";
}

std::optional<std::vector<int>> setting_values::cpu_list(std::string_view env) const {
  const std::optional<std::string> t = text(env);
  if (!t) return std::nullopt;
  try {
    return knit::parse_cpu_list(*t, "cpus");
  } catch (const knit::config_error&) {
    reject(env, accepted_text(row(env)));
  }
}

setting_values values_from_env(const env_lookup& getenv) {
  setting_values values;
  for (const setting& row : settings_table()) {
    const std::string name(row.env);
    std::optional<std::string> text = getenv(name.c_str());
    if (!text) continue;
    if (text->empty() && row.kind != setting_kind::removed) continue;
    values.give(row.env, std::move(*text), setting_origin::env);
  }
  return values;
}

}  // namespace knit_server

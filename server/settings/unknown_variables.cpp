// Warnings for KNIT_* variables the settings table does not know (unknown_variables.hpp).
#include "settings/unknown_variables.hpp"

#include <algorithm>
#include <numeric>

#include "settings/settings_table.hpp"
#include "settings/text_layout.hpp"

namespace knit_server {
namespace {

// Levenshtein distance: insertions, deletions and substitutions, one each.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The variables of knit's own tools (deploy/fleet.sh, knit-bench, the stress build, the
// package scripts): a shell that runs them exports these beside the server's, and they are
// no typo of a setting.
bool is_a_tool_variable(std::string_view name) {
  constexpr std::string_view kPrefixes[] = {"KNIT_FLEET_", "KNIT_BENCH_"};
  constexpr std::string_view kNames[] = {"KNIT_ENV_FILE", "KNIT_REPORT_SCRIPT", "KNIT_SERVER_PATH",
                                         "KNIT_STRESS_SCALE"};
  for (std::string_view prefix : kPrefixes) {
    if (name.starts_with(prefix)) return true;
  }
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

}  // namespace

std::string_view closest_name(std::string_view name, std::span<const std::string_view> candidates) {
  const std::size_t near = std::max<std::size_t>(1, name.size() / 4);
  std::string_view best;
  std::size_t best_distance = near + 1;
  for (std::string_view candidate : candidates) {
    const std::size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

std::vector<std::string> unknown_variable_warnings(std::span<const std::string> environment) {
  std::vector<std::string_view> shown;  // the names worth suggesting: not the hidden rows
  for (const setting& row : settings_table()) {
    if (row.group != setting_group::hidden) shown.push_back(row.env);
  }
  std::vector<std::string> warnings;
  for (const std::string& entry : environment) {
    const std::string_view name = std::string_view(entry).substr(0, entry.find('='));
    if (!name.starts_with("KNIT_") || find_setting(name) || is_a_tool_variable(name)) continue;
    std::string line =
        cat("knit-server: warning: ", name, " is not a knit-server setting and is ignored");
    const std::string_view near = closest_name(name, shown);
    line += near.empty() ? std::string(" (knit-server --help lists them)")
                         : cat(" (did you mean ", near, "?)");
    warnings.push_back(std::move(line));
  }
  return warnings;
}

}  // namespace knit_server

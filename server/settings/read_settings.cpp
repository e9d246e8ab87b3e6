// knit-server's configuration step (read_settings.hpp).
#include "settings/read_settings.hpp"

#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "settings/command_line.hpp"
#include "settings/effective_values.hpp"
#include "settings/generated_files.hpp"
#include "settings/unknown_variables.hpp"

extern char** environ;

namespace knit_server {
namespace {

constexpr int kExitConfig = 2;   // a bad flag or value
constexpr int kExitStartup = 1;  // the configuration cannot be built

// Prints `text` on stdout: the answer of a printing action, which then exits 0.
startup_settings print(const std::string& text) {
  std::cout << text << std::flush;
  return {std::nullopt, std::cout ? 0 : kExitStartup};
}

std::optional<std::string> process_env(const char* name) {
  if (const char* value = std::getenv(name)) return std::string(value);
  return std::nullopt;
}

}  // namespace

startup_settings read_settings(int argc, char** argv) {
  const std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  try {
    const command_line line = parse_command_line(args, process_env);
    switch (line.action) {
      case command_action::help: return print(help_text());
      case command_action::version: return print("knit-server " KNIT_SERVER_VERSION "\n");
      case command_action::print_env_file: return print(env_file_text());
      case command_action::print_man_options: return print(man_options_text());
      case command_action::print_markdown: return print(markdown_text());
      case command_action::run:
      case command_action::print_config: break;
    }
    std::vector<std::string> environment;
    for (char** entry = environ; *entry; ++entry) environment.emplace_back(*entry);
    for (const std::string& warning : unknown_variable_warnings(environment)) {
      std::cerr << warning << '\n';
    }
    server_settings settings = build_settings(line.values);
    if (line.action == command_action::print_config) {
      return print(print_config_text(line.values, settings));
    }
    return {std::move(settings), 0};
  } catch (const std::invalid_argument& e) {  // server_config_error, knit::config_error
    std::cerr << "knit-server: " << e.what() << '\n';
    return {std::nullopt, kExitConfig};
  } catch (const std::exception& e) {
    std::cerr << "knit-server: " << e.what() << '\n';
    return {std::nullopt, kExitStartup};
  }
}

}  // namespace knit_server

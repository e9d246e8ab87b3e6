// CLI11 over the settings table, and the environment behind it (command_line.hpp).
#include "settings/command_line.hpp"

#include <CLI/CLI.hpp>

#include "settings/text_layout.hpp"
#include "settings/unknown_variables.hpp"

namespace knit_server {
namespace {

constexpr std::size_t kColumn = 30;  // where --help's descriptions start
constexpr std::size_t kWidth = 100;  // --help's lines at most
constexpr std::size_t kText = kWidth - kColumn;

// The flags that are no setting, and the text each setting's option is given.
struct parsed {
  bool help = false;
  bool version = false;
  bool print_config = false;
  bool print_env_file = false;
  bool print_man_options = false;
  bool print_markdown = false;
  std::vector<std::string> texts = std::vector<std::string>(settings_table().size());
  std::vector<CLI::Option*> options = std::vector<CLI::Option*>(settings_table().size());
};

// A row's description in --help: what it does, then its variable, what it takes, its default.
std::string describe(const setting& row) {
  const std::string second = cat(row.env, "; ", accepted_in_full(row), "; default",
                                 row.default_value.empty() ? ": " : " ", default_text(row));
  return cat(wrap_text(row.help, kText), "\n", wrap_text(second, kText));
}

std::string environment_only_text() {
  std::string out = "\nEnvironment only:\n";
  for (const setting& row : settings_table()) {
    if (!row.flag.empty() || row.group == setting_group::hidden) continue;
    std::string name = cat("  ", row.env);
    name.resize(std::max(name.size() + 1, kColumn), ' ');
    const std::string pad(kColumn, ' ');
    out += cat(name, wrap_text(row.help, kText, pad), "\n", pad,
               wrap_text(cat("default: ", default_text(row)), kText, pad), "\n");
  }
  return out;
}

std::string footer_text() {
  return environment_only_text() + '\n' +
         wrap_text(
             "Each option is also read from the environment variable named under it; a flag "
             "wins over its variable, and an unset or empty variable means the default. A "
             "KNIT_* variable that is no setting is named on stderr at start-up. A bad value "
             "exits 2 naming it. Exit codes: 0 stopped (every request answered), 1 cannot start "
             "(or a second stop signal), 2 bad configuration, 3 the stop timeout passed and "
             "work was given up. SIGTERM drains and stops; SIGUSR1 prints one knit-stats line. "
             "The same table, with why some defaults differ from the knit library's: "
             "docs/configuration.md, man knit-server.",
             kWidth);
}

void define(CLI::App& app, parsed& p) {
  app.name("knit-server");
  app.description(wrap_text(
      "knit-server: the reference HTTP server (GET /ping, POST /ssr, POST /jwt) on Boost.Beast, "
      "its heavy routes run on a knit pool, inline, per route, on an asio::thread_pool or on N "
      "io threads (--mode).",
      kWidth));
  app.get_formatter()->column_width(kColumn);
  app.set_help_flag();  // replaced by the flag below, so --help is a result like the others
  app.allow_extras();   // an unknown option is reported in this server's words, with a hint
  app.footer(footer_text());
  const std::string general = "General";
  app.add_flag("-h,--help", p.help, "Print this help and exit")->group(general);
  app.add_flag("--version", p.version, "Print the version and exit")->group(general);
  app.add_flag("--print-config", p.print_config,
               wrap_text("Print each setting's effective value and where it came from (default, "
                         "env, flag), and exit; a bad value exits 2 as at start-up",
                         kText))
      ->group(general);
  // Hidden (group ""): the generated files that CI compares with the checked-in ones.
  app.add_flag("--print-env-file", p.print_env_file)->group("");
  app.add_flag("--print-man-options", p.print_man_options)->group("");
  app.add_flag("--print-markdown", p.print_markdown)->group("");
  for (const setting& row : settings_table()) {
    if (row.flag.empty()) continue;
    const std::size_t i = setting_index(row);
    CLI::Option* option = app.add_option(std::string(row.flag), p.texts[i], describe(row));
    option->option_text(std::string(row.unit));
    option->group(std::string(group_title(row.group)));
    option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last one given wins
    p.options[i] = option;
  }
}

[[noreturn]] void reject_extra(const std::string& extra) {
  const std::string name = extra.substr(0, extra.find('='));
  if (!name.starts_with("-")) {
    throw server_config_error(
        cat("\"", extra, "\": expected no arguments, only options (knit-server --help)"));
  }
  std::vector<std::string_view> flags;
  for (const setting& row : settings_table()) {
    if (!row.flag.empty()) flags.push_back(row.flag);
  }
  for (std::string_view general : {"--help", "--version", "--print-config"}) {
    flags.push_back(general);
  }
  const std::string_view near = closest_name(name, flags);
  throw server_config_error(cat(name, ": expected a knit-server option",
                                near.empty() ? std::string(" (knit-server --help lists them)")
                                             : cat(" (did you mean ", near, "?)")));
}

}  // namespace

command_line parse_command_line(const std::vector<std::string>& args, const env_lookup& getenv) {
  CLI::App app;
  parsed p;
  define(app, p);
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));  // CLI11 takes them reversed
  } catch (const CLI::ArgumentMismatch& e) {  // a flag without its value: CLI11 names it first
    const std::string what = e.what();
    const std::string flag = what.substr(0, what.find(':'));
    for (const setting& row : settings_table()) {
      if (row.flag == flag) throw server_config_error(cat(flag, ": expected ", accepted_text(row)));
    }
    throw server_config_error(what);
  } catch (const CLI::ParseError& e) {
    throw server_config_error(e.what());
  }
  command_line out;
  if (p.help) {
    out.action = command_action::help;
    return out;
  }
  if (p.version) {
    out.action = command_action::version;
    return out;
  }
  if (!app.remaining().empty()) reject_extra(app.remaining().front());
  if (p.print_config) out.action = command_action::print_config;
  if (p.print_env_file) out.action = command_action::print_env_file;
  if (p.print_man_options) out.action = command_action::print_man_options;
  if (p.print_markdown) out.action = command_action::print_markdown;

  out.values = values_from_env(getenv);
  for (const setting& row : settings_table()) {
    const std::size_t i = setting_index(row);
    if (p.options[i] && p.options[i]->count() > 0) {
      out.values.give(row.env, p.texts[i], setting_origin::flag);
    }
  }
  return out;
}

std::string help_text() {
  CLI::App app;
  parsed p;
  define(app, p);
  return app.help();
}

}  // namespace knit_server

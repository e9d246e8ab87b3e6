// knit-bench's command line (CLI11): the subcommands run, report and plan, their flags
// (--flag VALUE or --flag=VALUE) and the generated --help. Parsing only: main turns a
// bench_command into a run, a report or a printed plan.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/cli_errors.hpp"
#include "driver/run/peers.hpp"
#include "driver/run/run_options.hpp"

namespace knit::bench {

using bench_cli::cli_error;  // bad arguments (exit 2)
using bench_cli::cli_help;   // --help, -h or `knit-bench help` (stdout, exit 0)

struct bench_command {
  enum class kind { run, report, plan };
  kind what = kind::run;

  // run and plan: a built-in plan ("default", "full", ...) or, for run, a plan file.
  // Empty both for run: the default plan.
  std::string builtin_name;
  std::string plan_file;
  std::vector<std::string> profiles;  // --profiles, checked to be bun or native

  // report: the rows.jsonl to render; --no-charts.
  std::string rows_path;
  bool charts = true;

  // run: the flags that go straight into the options (charts and command_line included);
  // the plan's sizing is overridden only by the flags given.
  run_options run;
  std::optional<double> idle_s, warmup_s, window_s;
  std::optional<int> repeat, conns;
  std::vector<peer_spec> peers;      // --peer, with their --peer-routes applied
  std::string server_exe, load_exe;  // empty: knit-server / knit-load beside knit-bench
};

// Parses a whole argv (argv[0] included, kept as run.command_line). Throws cli_error on
// bad arguments and cli_help for help.
bench_command parse_command_line(const std::vector<std::string>& argv);

}  // namespace knit::bench

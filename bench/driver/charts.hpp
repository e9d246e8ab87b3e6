// PNG charts for the report, drawn by the gnuplot binary (skipped with a warning
// when it is not installed).
#pragma once

#include <string>
#include <vector>

#include "driver/configs.hpp"

namespace knit::bench {

struct ChartRef {
  std::string section;  // "profile:<name>" or "sweep:<name>": where the report places it
  std::string title;
  std::string file;     // relative to the report's directory, e.g. "charts/idle_by_n_bun.png"
};

struct ChartSet {
  std::vector<ChartRef> charts;
  std::vector<std::string> warnings;
};

// Writes charts/*.gp (self-contained scripts with inline data, so a chart can be
// re-drawn or tweaked by hand) and runs gnuplot on each. $KNIT_BENCH_GNUPLOT
// overrides the binary; set it to "" to skip charts.
ChartSet render_charts(const std::vector<Config>& configs, const std::string& report_dir);

}  // namespace knit::bench

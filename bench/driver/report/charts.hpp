// PNG charts for the report, drawn by the gnuplot binary (skipped with a warning
// when it is not installed).
#pragma once

#include <string>
#include <vector>

#include "driver/report/configs.hpp"

namespace knit::bench {

struct chart_ref {
  std::string section;  // "profile:<name>" or "sweep:<name>": where the report places it
  std::string title;
  std::string file;  // relative to the report's directory, e.g. "charts/idle_by_n_bun.png"
};

struct chart_set {
  std::vector<chart_ref> charts;
  std::vector<std::string> warnings;
};

// Writes charts/*.gp (self-contained scripts with inline data, so a chart can be
// re-drawn or tweaked by hand) and runs gnuplot on each. $KNIT_BENCH_GNUPLOT
// overrides the binary; set it to "" to skip charts.
chart_set render_charts(const std::vector<measured_config>& configs, const std::string& report_dir);

}  // namespace knit::bench

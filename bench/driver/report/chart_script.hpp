// The drawing side of the report's charts: a gnuplot script with its data inline, the
// drawer that writes charts/NAME.gp and runs gnuplot on it, and the data-block helpers
// every chart uses (charts.cpp, charts_hosts.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "driver/report/charts.hpp"

namespace knit::bench::chart_detail {

std::string file_safe(const std::string& s);
std::string quoted(const std::string& s);
// A median for a data block; "?" (gnuplot's missing value) when not measured.
std::string num(const rep_stat& s);

// One chart: a gnuplot script with its data inline.
struct gnuplot_script {
  std::string name;  // file stem
  std::string title;
  std::string section;
  std::string body;  // data blocks and plot commands, after the terminal/output lines
};

class chart_drawer {
 public:
  chart_drawer(std::string report_dir, std::string gnuplot);
  // Writes the script, runs gnuplot, and adds the chart to out (or a warning).
  void draw(const gnuplot_script& s, chart_set& out);

 private:
  std::string dir_, gnuplot_, terminal_;
};

// A data block over categorical x labels: rows of (label, values...).
std::string categorical_block(
    const std::string& name, const std::vector<std::string>& columns,
    const std::vector<std::pair<std::string, std::vector<std::string>>>& rows);
// "plot" of every column of a block against its x labels.
std::string plot_columns(const std::string& block, const std::vector<std::string>& columns,
                         const std::string& style);

}  // namespace knit::bench::chart_detail

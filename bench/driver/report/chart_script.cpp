// The drawing side of the report's charts: a gnuplot script with its data inline, the
// drawer that writes charts/NAME.gp and runs gnuplot on it, and the data-block helpers.
#include "driver/report/chart_script.hpp"

#include <sys/stat.h>

#include <cctype>
#include <fstream>

#include "driver/run/numfmt.hpp"
#include "driver/system/spawn.hpp"

namespace knit::bench::chart_detail {

std::string file_safe(const std::string& s) {
  std::string o;
  for (char ch : s) o += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return o.empty() ? "none" : o;
}

std::string quoted(const std::string& s) {
  std::string o = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\';
    o += ch;
  }
  return o + "\"";
}

std::string num(const rep_stat& s) { return s ? shortest(s.median) : "?"; }

chart_drawer::chart_drawer(std::string report_dir, std::string gnuplot)
    : dir_(std::move(report_dir)), gnuplot_(std::move(gnuplot)) {
  ::mkdir((dir_ + "/charts").c_str(), 0755);
  // pngcairo draws nicer text; plain png (libgd) is the fallback some builds have.
  terminal_ = capture_output({gnuplot_, "-e", "set terminal pngcairo"}) ? "pngcairo" : "png";
}

void chart_drawer::draw(const gnuplot_script& s, chart_set& out) {
  const std::string png = "charts/" + s.name + ".png";
  const std::string gp = dir_ + "/charts/" + s.name + ".gp";
  {
    std::ofstream f(gp, std::ios::trunc);
    f << "# " << s.title << "\n"
      << "set terminal " << terminal_ << " size 960,540 noenhanced\n"
      << "set output " << quoted(dir_ + "/" + png) << "\n"
      << "set datafile missing \"?\"\n"
      << "set key inside left top opaque\n"
      << "set grid\n"
      << s.body;
  }
  spawn_spec sp;
  sp.exe = gnuplot_;
  sp.argv = {gnuplot_, gp};
  sp.env = child_environment({});
  sp.output_path = dir_ + "/charts/gnuplot.log";
  try {
    pid_t pid = spawn_process(sp);
    auto st = wait_exit(pid, 60);
    if (!st) {
      stop_process(pid, 1);
      out.warnings.push_back("gnuplot timed out on " + gp);
      return;
    }
    struct stat info {};
    if (!st->exited || st->code != 0 || ::stat((dir_ + "/" + png).c_str(), &info) != 0 ||
        info.st_size == 0) {
      out.warnings.push_back("gnuplot failed on " + gp + " (see charts/gnuplot.log)");
      return;
    }
  } catch (const std::exception& e) {
    out.warnings.push_back(std::string("cannot run gnuplot: ") + e.what());
    return;
  }
  out.charts.push_back({s.section, s.title, png});
}


std::string categorical_block(
    const std::string& name, const std::vector<std::string>& columns,
    const std::vector<std::pair<std::string, std::vector<std::string>>>& rows) {
  // Built with append: GCC 12 flags "literal" + std::string with a bogus -Wrestrict at -O3.
  std::string b = "$";
  b += name;
  b += " << EOD\n# label";
  for (const auto& c : columns) {
    b += ' ';
    b += quoted(c);
  }
  b += "\n";
  for (const auto& [label, vals] : rows) {
    b += quoted(label);
    for (const auto& v : vals) b += " " + v;
    b += "\n";
  }
  return b + "EOD\n";
}

std::string plot_columns(const std::string& block, const std::vector<std::string>& columns,
                         const std::string& style) {
  std::string p = "plot ";
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i) p += ", \\\n     ";
    p += "$" + block + " using 0:" + std::to_string(i + 2) + (i == 0 ? ":xtic(1)" : "") + " with " +
         style + " title " + quoted(columns[i]);
  }
  return p + "\n";
}

}  // namespace knit::bench::chart_detail

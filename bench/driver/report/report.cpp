// report.md and charts/*.png are rendered by report.py (Python 3; matplotlib for the charts)
// from rows.jsonl alone, plus meta.json beside it; this runs it for knit-bench.
#include "driver/report/report.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "driver/report/report_python.hpp"
#include "driver/system/spawn.hpp"

namespace knit::bench {

std::string write_report(const std::string& rows_path, bool with_charts,
                         std::vector<std::string>* warnings) {
  const std::string python = report_python(with_charts);
  if (python.empty())
    throw std::runtime_error(
        "python3 not found: it renders report.md (install python3 and "
        "python3-matplotlib; `./knit deps` does)");
  const char* script = std::getenv("KNIT_BENCH_REPORT");
  spawn_spec sp;
  sp.exe = python;
  sp.argv = {python, script && *script ? script : KNIT_REPORT_SCRIPT, rows_path};
  if (!with_charts) sp.argv.push_back("--no-charts");
  sp.env = child_environment({});
  // The script's output: "warning: ..." lines, then "wrote PATH"; or why it failed.
  char log[] = "/tmp/knit-bench-report-XXXXXX";
  const int fd = ::mkstemp(log);
  if (fd < 0) throw std::runtime_error("cannot create a temporary file for report.py's output");
  ::close(fd);
  sp.output_path = log;
  std::optional<exit_status> st;
  try {
    const pid_t pid = spawn_process(sp);
    // Charts of a large sweep take seconds each; a script stuck for minutes is a bug.
    st = wait_exit(pid, 300);
    if (!st) st = stop_process(pid, 1);
  } catch (...) {
    ::unlink(log);
    throw;
  }
  std::ifstream in(log);
  std::string line, out, path;
  std::stringstream all;
  while (std::getline(in, line)) {
    all << line << "\n";
    if (line.rfind("warning: ", 0) == 0 && warnings) warnings->push_back(line.substr(9));
    if (line.rfind("wrote ", 0) == 0) path = line.substr(6);
  }
  ::unlink(log);
  if (!st->exited || st->code != 0 || path.empty())
    throw std::runtime_error("report.py " + st->text() + ": " + all.str());
  return path;
}

}  // namespace knit::bench

// report.md and charts/*.png are rendered by report.py (Python 3; matplotlib for the charts)
// from rows.jsonl alone, plus meta.json beside it; this runs it for knit-bench.
#pragma once

#include <string>
#include <vector>

namespace knit::bench {

// Runs `python3 report.py rows_path [--no-charts]` (python3 from PATH, or /usr/bin/python3 when
// only that one can import matplotlib: report_python.hpp; the script is
// bench/driver/report/report.py, or $KNIT_BENCH_REPORT), which writes report.md and charts/
// beside rows_path. Returns the report's path and fills `warnings` (charts skipped, say; the
// report lists them too). Throws with the script's output when python3 is missing or the
// script fails.
std::string write_report(const std::string& rows_path, bool with_charts,
                         std::vector<std::string>* warnings = nullptr);

}  // namespace knit::bench

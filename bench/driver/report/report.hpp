// report.md from rows.jsonl alone (plus meta.json when present): the reference tables
// A, B, C, the peers, pool counters and the cost sweep, one table set per cost profile.
#pragma once

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "driver/report/charts.hpp"
#include "driver/report/report_notes.hpp"
#include "driver/run/rows.hpp"

namespace knit::bench {

// Markdown for `rows`. `meta` is meta.json's object (or null); charts are linked in
// their sections; warnings (e.g. charts skipped) are listed in the header.
std::string render_markdown(const std::vector<result_row>& rows, const boost::json::object* meta,
                            const std::vector<chart_ref>& charts,
                            const std::vector<std::string>& warnings);

// Reads rows_path and meta.json beside it, draws charts (unless with_charts is false)
// and writes report.md beside it. Returns the report's path; throws on unreadable rows.
std::string write_report(const std::string& rows_path, bool with_charts,
                         std::vector<std::string>* warnings = nullptr);

}  // namespace knit::bench

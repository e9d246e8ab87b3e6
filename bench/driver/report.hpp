// report.md from rows.jsonl alone (plus meta.json when present): the seed's tables
// A, B, C, pool counters and the cost sweep, one table set per cost profile.
#pragma once

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "driver/charts.hpp"
#include "driver/rows.hpp"

namespace knit::bench {

// Markdown for `rows`. `meta` is meta.json's object (or null); charts are linked in
// their sections; warnings (e.g. charts skipped) are listed in the header.
std::string render_markdown(const std::vector<Row>& rows, const boost::json::object* meta,
                            const std::vector<ChartRef>& charts, const std::vector<std::string>& warnings);

// Reads rows_path and meta.json beside it, draws charts (unless with_charts is false)
// and writes report.md beside it. Returns the report's path; throws on unreadable rows.
std::string write_report(const std::string& rows_path, bool with_charts, std::vector<std::string>* warnings = nullptr);

// The report's paragraph on foreign load (Row::foreign_cores): how much the machine was
// busy elsewhere during the windows, how many were rerun, and which rows are flagged and
// carry the mark in the tables. Empty when no row measured it (older rows).
std::string foreign_load_note(const std::vector<Row>& rows);

// A warning for rows whose knit-stats reported a mode other than their server_mode (a
// server that accepted KNIT_MODE=asio but ran inline, say). Empty when all agree.
std::string mode_mismatch_note(const std::vector<Row>& rows);

// Helpers shared with tests: "+119%", "4.0x", "5.2x less", "-47%".
std::string pct_change(double base, double value);
std::string ratio_text(double old_value, double new_value, bool higher_is_better);

}  // namespace knit::bench

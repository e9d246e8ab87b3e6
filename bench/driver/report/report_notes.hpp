// The notes of report.md: foreign load on the machine, rows whose server ran another
// mode or another number of hosts, and the change / ratio texts the tables print.
#pragma once

#include <string>
#include <vector>

#include "driver/run/rows.hpp"

namespace knit::bench {

// The report's paragraph on foreign load (result_row::foreign_cores): how much the machine was
// busy elsewhere during the windows, how many were rerun, and which rows are flagged and
// carry the mark in the tables. Empty when no row measured it (older rows).
std::string foreign_load_note(const std::vector<result_row>& rows);

// A warning for rows whose knit-stats reported a mode other than their server_mode (a
// server that accepted KNIT_MODE=asio but ran inline, say). Empty when all agree.
std::string mode_mismatch_note(const std::vector<result_row>& rows);

// The same for hosts: rows whose knit-stats listed another number of hosts than they asked
// for (a server from before KNIT_HOSTS lists none and runs one). Empty when all agree.
std::string hosts_mismatch_note(const std::vector<result_row>& rows);

// Helpers shared with tests: "+119%", "4.0x", "5.2x less", "-47%".
std::string pct_change(double base, double value);
std::string ratio_text(double old_value, double new_value, bool higher_is_better);

}  // namespace knit::bench

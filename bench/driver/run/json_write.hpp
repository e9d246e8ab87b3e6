// Writes Boost.JSON values as compact, human-readable JSON (plain decimals, not 2.8151E3).
#pragma once

#include <boost/json.hpp>
#include <string>

namespace knit::bench {

// One line, keys in insertion order, doubles in shortest round-trip form with a
// ".0" kept on whole numbers so they stay doubles for Python readers. Non-finite
// doubles become null (JSON has no NaN).
std::string to_json_line(const boost::json::value& v);

// Indented form for files people read (meta.json, printed plans).
std::string to_json_pretty(const boost::json::value& v);

// Parses text into a value, throwing std::runtime_error with `what` and the parser's message.
boost::json::value parse_json(std::string_view text, const std::string& what);

}  // namespace knit::bench

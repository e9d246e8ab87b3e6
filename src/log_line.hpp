// log_line: how the library says something (knit/log.hpp): one line to the program's sink,
// stderr by default. Nothing in src/ writes to stdout or stderr but through these, except a
// worker process about to exit, whose stderr is its host's pipe (child_output.hpp).
#pragma once

#include <string_view>

namespace knit::detail {

// One line, without its newline, to the sink. Never throws; safe on any thread.
void log_line(std::string_view line) noexcept;

// printf-style: the formatted text (cut at 1 KiB) as one line.
[[gnu::format(printf, 1, 2)]] void log_format(const char* format, ...) noexcept;

}  // namespace knit::detail

// Word wrapping for the texts printed from the settings table (--help, the environment file).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace knit_server {

// The parts one after the other. (Why not "a" + std::string(b): GCC 12 at -O3 warns
// -Wrestrict, wrongly, on a literal plus a temporary string, and warnings are errors here.)
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::string out;
  (out.append(std::string_view(parts)), ...);
  return out;
}

// `text` in lines of at most `width` characters (a longer word gets a line of its own), each
// line but the first preceded by `prefix`, joined by '\n'; no '\n' at the end.
inline std::string wrap_text(std::string_view text, std::size_t width,
                             std::string_view prefix = "") {
  std::string out;
  std::size_t line = 0;  // characters on the current line
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view word = text.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (line > 0 && line + 1 + word.size() > width) {
      out += '\n';
      out += prefix;
      line = 0;
    } else if (line > 0) {
      out += ' ';
      ++line;
    }
    out += word;
    line += word.size();
  }
  return out;
}

}  // namespace knit_server

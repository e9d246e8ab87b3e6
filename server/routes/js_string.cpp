// String.prototype.trim and JSON.stringify's QuoteJSONString over WTF-8 text.
#include "js_string.hpp"

#include "utf8.hpp"

namespace knit_server::routes::js {

bool is_whitespace(char32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
    case 0xFEFF: return true;
    default: return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::string_view trim(std::string_view s) {
  std::size_t begin = 0;
  while (begin < s.size()) {
    std::size_t i = begin;
    if (!is_whitespace(utf8::next(s, i))) break;
    begin = i;
  }
  std::size_t end = s.size();
  while (end > begin) {
    std::size_t i = end;
    if (!is_whitespace(utf8::prev(s, i))) break;
    end = i;
  }
  return s.substr(begin, end - begin);
}

void append_json_quoted(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto append_unit_escape = [&](char32_t unit) {
    out += "\\u";
    out += kHex[(unit >> 12) & 0xF];
    out += kHex[(unit >> 8) & 0xF];
    out += kHex[(unit >> 4) & 0xF];
    out += kHex[unit & 0xF];
  };
  out += '"';
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      ++i;
      switch (b) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (b < 0x20) {
            append_unit_escape(b);
          } else {
            out += static_cast<char>(b);
          }
      }
      continue;
    }
    const std::size_t start = i;
    const char32_t cp = utf8::next(s, i);
    if (utf8::is_surrogate(cp)) {
      append_unit_escape(cp);
    } else if (cp == utf8::kReplacement && i - start == 1) {
      utf8::append(out, cp);  // a malformed byte in caller-supplied text
    } else {
      out.append(s.substr(start, i - start));
    }
  }
  out += '"';
}

}  // namespace knit_server::routes::js

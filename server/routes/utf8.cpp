// Strict UTF-8 validation (WHATWG decoder, fatal mode) and WTF-8 encode/decode helpers.
#include "utf8.hpp"

namespace knit_server::routes::utf8 {

namespace {

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

// Length of the well-formed sequence at bytes[i], or 0. The ranges are Unicode's Table 3-7,
// which is exactly what the WHATWG decoder accepts: its lower/upper bounds on the second byte
// reject overlong forms (E0 80.., F0 80..), surrogates (ED A0..) and > U+10FFFF (F4 90..).
std::size_t sequence_length(std::string_view bytes, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(bytes[i + k]); };
  const unsigned char b0 = at(0);
  if (b0 < 0x80) return 1;
  std::size_t len = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + len > bytes.size()) return 0;
  if (at(1) < lo || at(1) > hi) return 0;
  for (std::size_t k = 2; k < len; ++k) {
    if (!is_continuation(at(k))) return 0;
  }
  return len;
}

}  // namespace

std::optional<std::string_view> decode_fatal(std::string_view bytes) {
  for (std::size_t i = 0; i < bytes.size();) {
    const std::size_t len = sequence_length(bytes, i);
    if (len == 0) return std::nullopt;
    i += len;
  }
  if (bytes.starts_with("\xEF\xBB\xBF")) bytes.remove_prefix(3);
  return bytes;
}

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

char32_t next(std::string_view s, std::size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  std::size_t len = 0;
  char32_t cp = 0;
  if (b0 < 0x80) {
    ++i;
    return b0;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    ++i;
    return kReplacement;
  }
  if (i + len > s.size()) {
    ++i;
    return kReplacement;
  }
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (!is_continuation(b)) {
      ++i;
      return kReplacement;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  i += len;
  return cp;
}

char32_t prev(std::string_view s, std::size_t& end) {
  std::size_t start = end - 1;
  // Walk back over at most three continuation bytes to the lead byte.
  while (start > 0 && end - start < 4 && is_continuation(static_cast<unsigned char>(s[start]))) {
    --start;
  }
  std::size_t i = start;
  const char32_t cp = next(s, i);
  if (i != end) {
    // Not one sequence ending at `end` (malformed text): step back a single byte.
    end -= 1;
    return kReplacement;
  }
  end = start;
  return cp;
}

void append_well_formed(std::string& out, std::string_view wtf8) {
  std::size_t i = 0;
  while (i < wtf8.size()) {
    // Fast path: copy the run of ASCII and non-surrogate sequences untouched.
    const std::size_t run_start = i;
    while (i < wtf8.size()) {
      const auto b = static_cast<unsigned char>(wtf8[i]);
      if (b == 0xED && i + 1 < wtf8.size() && static_cast<unsigned char>(wtf8[i + 1]) >= 0xA0) {
        break;
      }
      ++i;
    }
    out.append(wtf8.substr(run_start, i - run_start));
    if (i < wtf8.size()) {
      next(wtf8, i);  // the lone surrogate
      append(out, kReplacement);
    }
  }
}

}  // namespace knit_server::routes::utf8

// Strict UTF-8 input (TextDecoder fatal) and the WTF-8 text model used for JS strings.
//
// A JS string is UTF-16 and may hold unpaired surrogates ("\ud800" is valid JSON). We keep
// strings as WTF-8: UTF-8 that may also encode a lone surrogate as ED A0..BF xx. Paired
// surrogates are always joined into one 4-byte sequence, so each JS string has exactly one
// WTF-8 spelling, and the only place the difference matters is output: an HTTP body (UTF-8)
// carries U+FFFD for a lone surrogate, JSON.stringify writes \udXXX.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace knit_server::routes::utf8 {

inline constexpr char32_t kReplacement = 0xFFFD;

// `new TextDecoder("utf-8", {fatal: true}).decode(bytes)`: nullopt where it throws
// (overlong forms, encoded surrogates, > U+10FFFF, truncated or stray bytes); otherwise the
// text, without one leading BOM (EF BB BF), which the decoder strips since ignoreBOM is false.
std::optional<std::string_view> decode_fatal(std::string_view bytes);

// Appends `cp` (any code point 0..10FFFF, surrogates included) in WTF-8.
void append(std::string& out, char32_t cp);

// Decodes the code point starting at s[i] and moves i past it. The input is WTF-8 we built;
// a malformed byte (possible only in caller-supplied text such as the runtime name) decodes
// as U+FFFD one byte at a time so that callers never loop forever or read past the end.
char32_t next(std::string_view s, std::size_t& i);

// Decodes the code point that ends just before s[end] and moves end to its first byte.
char32_t prev(std::string_view s, std::size_t& end);

inline bool is_surrogate(char32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

// Appends `wtf8` as well-formed UTF-8: a lone surrogate becomes U+FFFD (EF BF BD), which is
// what Bun/Node do when a JS string with one is written to a response body.
void append_well_formed(std::string& out, std::string_view wtf8);

}  // namespace knit_server::routes::utf8

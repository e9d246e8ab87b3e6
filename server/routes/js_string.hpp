// The two JS string operations the routes need: String.prototype.trim and JSON.stringify quoting.
#pragma once

#include <string>
#include <string_view>

namespace knit_server::routes::js {

// ECMAScript WhiteSpace or LineTerminator: what trim() and Number("...") strip. Wider than C's
// isspace: NBSP, U+1680, U+2000..U+200A, U+2028/9, U+202F, U+205F, U+3000 and U+FEFF count.
bool is_whitespace(char32_t cp);

// `s.trim()` for a WTF-8 string (a view into s).
std::string_view trim(std::string_view wtf8);

// Appends JSON.stringify(s) for a WTF-8 string: quotes, the short escapes \" \\ \b \f \n \r \t,
// \u00xx (lowercase hex) for other controls, \udxxx for lone surrogates (ES2019 well-formed
// JSON.stringify); everything else, U+2028/9 and DEL included, stays raw UTF-8.
void append_json_quoted(std::string& out, std::string_view wtf8);

}  // namespace knit_server::routes::js

// JS Number() over JSON.parse results and strings, and en-US Number.prototype.toLocaleString.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "js_json.hpp"

namespace knit_server::routes::js {

// The value of a decimal literal already checked against the JSON number grammar or
// StrDecimalLiteral (optional sign, digits, '.', exponent). Correctly rounded like JS;
// overflow gives +-Infinity ("1e400"), underflow +-0. Independent of the C locale.
double decimal_literal_value(std::string_view literal);

// StringToNumber (ECMA-262 7.1.4.1.1) for a WTF-8 string: JS whitespace trimmed, "" -> 0,
// 0x/0o/0b integers (no sign), [+-]Infinity, decimal literals ("5.", ".5", "1e3");
// anything else, e.g. "1_000", "0x", "inf", "1,2", is NaN.
double string_to_number(std::string_view wtf8);

// `Number(value)` for a JSON.parse result; nullptr stands for undefined (NaN). An array goes
// through String(array) = elements joined with ",", so [] -> 0, [7] -> 7, ["0x10"] -> 16,
// [[3]] -> 3, [null] -> 0, [1,2] -> NaN. A plain object is "[object Object]" -> NaN.
// Throws js_error where JS throws a TypeError: ToPrimitive of an object with an own "toString"
// key (never callable in JSON), whether it is the value or anywhere inside the array.
double to_number(const document& doc, const node* value);

// `n.toLocaleString()` in en-US for an integer: "0", "1,234", "100,000".
std::string to_locale_string(std::int64_t n);

}  // namespace knit_server::routes::js

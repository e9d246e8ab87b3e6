// ToNumber (ECMA-262 7.1.4) for JSON values and strings, and en-US integer grouping.
#include "js_number.hpp"

#include <locale.h>
#include <stdlib.h>

#include <cmath>
#include <limits>
#include <vector>

#include "js_string.hpp"
#include "routes.hpp"

namespace knit_server::routes::js {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInfinity = std::numeric_limits<double>::infinity();

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// strtod_l with the "C" locale: glibc's strtod is correctly rounded (as JS requires) and handles
// hex floats, but plain strtod would honour a ',' decimal point if the process set a locale.
double c_strtod(const std::string& text) {
  static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
  return strtod_l(text.c_str(), nullptr, c_locale);
}

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

// NonDecimalIntegerLiteral digits (after "0x"/"0o"/"0b"). The exact integer is rewritten as a
// hex float so that strtod rounds it to nearest-even like JS, also past 2^53 and up to overflow.
double non_decimal_value(std::string_view digits, int radix) {
  if (digits.empty()) return kNaN;  // "0x"
  for (const char c : digits) {
    if (digit_value(c) >= radix) return kNaN;
  }
  std::string hex = "0x";
  if (radix == 16) {
    hex.append(digits);
  } else {
    const int bits_per_digit = radix == 8 ? 3 : 1;
    std::vector<bool> bits;
    bits.reserve(digits.size() * bits_per_digit + 3);
    for (const char c : digits) {
      const int v = digit_value(c);
      for (int b = bits_per_digit - 1; b >= 0; --b) bits.push_back(((v >> b) & 1) != 0);
    }
    while (bits.size() % 4 != 0) bits.insert(bits.begin(), false);
    for (std::size_t i = 0; i < bits.size(); i += 4) {
      const int nibble = (bits[i] << 3) | (bits[i + 1] << 2) | (bits[i + 2] << 1) | bits[i + 3];
      hex += "0123456789abcdef"[nibble];
    }
  }
  hex += "p0";
  return c_strtod(hex);
}

// StrUnsignedDecimalLiteral without "Infinity": digits with an optional '.', at least one digit
// overall, then an optional exponent with at least one digit.
bool is_unsigned_decimal_literal(std::string_view s) {
  std::size_t i = 0;
  std::size_t digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (i == s.size() || !is_digit(s[i])) return false;
    while (i < s.size() && is_digit(s[i])) ++i;
  }
  return i == s.size();
}

// True where ToString(v), as Array.prototype.join calls it on every element, throws.
bool to_string_throws(const document& doc, const node& value) {
  std::vector<const node*> pending{&value};
  while (!pending.empty()) {
    const node* n = pending.back();
    pending.pop_back();
    if (n->type == kind::object && doc.member(*n, "toString") != nullptr) return true;
    if (n->type == kind::array) {
      for (const node* c = doc.first_child(*n); c != nullptr; c = doc.next_sibling(*c)) {
        pending.push_back(c);
      }
    }
  }
  return false;
}

}  // namespace

double decimal_literal_value(std::string_view literal) { return c_strtod(std::string(literal)); }

double string_to_number(std::string_view wtf8) {
  const std::string_view s = trim(wtf8);
  if (s.empty()) return 0;
  for (const char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return kNaN;
  }
  if (s.size() >= 2 && s[0] == '0') {
    switch (s[1]) {
      case 'x':
      case 'X': return non_decimal_value(s.substr(2), 16);
      case 'o':
      case 'O': return non_decimal_value(s.substr(2), 8);
      case 'b':
      case 'B': return non_decimal_value(s.substr(2), 2);
      default: break;
    }
  }
  std::string_view unsigned_part = s;
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    unsigned_part.remove_prefix(1);
  }
  if (unsigned_part == "Infinity") return negative ? -kInfinity : kInfinity;
  if (!is_unsigned_decimal_literal(unsigned_part)) return kNaN;
  return decimal_literal_value(s);
}

double to_number(const document& doc, const node* value) {
  if (value == nullptr) return kNaN;  // undefined
  switch (value->type) {
    case kind::null: return 0;
    case kind::boolean: return value->boolean ? 1 : 0;
    case kind::number: return value->number;
    case kind::string: return string_to_number(doc.text(*value));
    case kind::object:
      if (to_string_throws(doc, *value)) throw js_error("TypeError: No default value");
      return kNaN;  // "[object Object]"
    case kind::array: break;
  }
  // Number(array) = StringToNumber(array.join(",")). join converts every element first, so a
  // throwing element anywhere throws even when the result would be NaN anyway.
  if (to_string_throws(doc, *value)) throw js_error("TypeError: No default value");
  const node* array = value;
  for (;;) {
    if (array->size == 0) return 0;    // ""
    if (array->size > 1) return kNaN;  // contains ","
    const node& only = *doc.first_child(*array);
    switch (only.type) {
      case kind::null: return 0;              // join writes "" for null
      case kind::boolean: return kNaN;        // "true" / "false"
      case kind::number: return only.number;  // Number(String(x)) === x (shortest round trip)
      case kind::string: return string_to_number(doc.text(only));
      case kind::object: return kNaN;          // "[object Object]"
      case kind::array: array = &only; break;  // String([[x]]) === String([x])
    }
  }
}

std::string to_locale_string(std::int64_t n) {
  const bool negative = n < 0;
  std::string digits = std::to_string(negative ? -(n + 1) + 1ULL : static_cast<std::uint64_t>(n));
  std::string out;
  if (negative) out += '-';
  const std::size_t first_group = digits.size() % 3 == 0 ? 3 : digits.size() % 3;
  out.append(digits, 0, first_group);
  for (std::size_t i = first_group; i < digits.size(); i += 3) {
    out += ',';
    out.append(digits, i, 3);
  }
  return out;
}

}  // namespace knit_server::routes::js

// Number rounding and formatting that matches what the reference benchmark's Python harness
// printed.
#include "driver/run/numfmt.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace knit::bench {

double py_round(double x, int ndigits) {
  if (!std::isfinite(x)) return x;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", ndigits, x);
  return std::strtod(buf, nullptr);
}

long long py_round_int(double x) {
  // nearbyint honours the default rounding mode, round-to-nearest-even, like Python.
  return static_cast<long long>(std::nearbyint(x));
}

std::string fixed(double x, int decimals) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  std::string s = buf;
  if (s == "-0" || s.rfind("-0.", 0) == 0) {
    // "-0.00" reads as a sign where there is none; drop it.
    bool all_zero = s.find_first_not_of("-0.") == std::string::npos;
    if (all_zero) s.erase(0, 1);
  }
  return s;
}

std::string shortest(double x) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, res.ptr);
}

std::string seconds_text(double s) { return shortest(s); }

}  // namespace knit::bench

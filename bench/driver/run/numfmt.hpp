// Number rounding and formatting that matches what the reference benchmark's Python harness
// printed.
#pragma once

#include <string>

namespace knit::bench {

// Python's round(x, ndigits) for ndigits >= 0: correctly rounded from the exact
// binary value, ties to even. glibc's printf rounds the same way, so we go through it.
double py_round(double x, int ndigits);

// Python's round(x) -> int (ties to even).
long long py_round_int(double x);

// printf("%.*f"): fixed decimals, the way the reference tables print values.
std::string fixed(double x, int decimals);

// Shortest text that reads back as the same double ("5", "0.25", "2815.1").
std::string shortest(double x);

// A duration for humans and for command lines: "5", "0.3".
std::string seconds_text(double s);

}  // namespace knit::bench

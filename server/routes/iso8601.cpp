// Date.prototype.toISOString: UTC calendar fields from milliseconds since the epoch.
#include "routes.hpp"

namespace knit_server::routes {

namespace {

struct civil_date {
  std::int64_t year;
  unsigned month;  // 1..12
  unsigned day;    // 1..31
};

// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's civil_from_days),
// valid for the whole JS Date range, negative days included.
civil_date civil_from_days(std::int64_t days) {
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const auto doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned day = doy - (153 * mp + 2) / 5 + 1;
  const unsigned month = mp < 10 ? mp + 3 : mp - 9;
  const std::int64_t year = static_cast<std::int64_t>(yoe) + era * 400 + (month <= 2 ? 1 : 0);
  return {year, month, day};
}

// Appends the non-negative `value` in decimal, zero-padded to at least `width` digits.
void append_padded(std::string& out, std::int64_t value, std::size_t width) {
  const std::string digits = std::to_string(value);
  if (digits.size() < width) out.append(width - digits.size(), '0');
  out += digits;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

}  // namespace

std::string iso8601_ms(std::chrono::system_clock::time_point t) {
  // Date keeps whole milliseconds, rounded toward -infinity (new Date(Date.now())).
  const std::int64_t ms =
      std::chrono::floor<std::chrono::milliseconds>(t.time_since_epoch()).count();
  constexpr std::int64_t kMsPerDay = 86'400'000;
  const std::int64_t days = floor_div(ms, kMsPerDay);
  const std::int64_t in_day = ms - days * kMsPerDay;
  const civil_date date = civil_from_days(days);

  std::string out;
  out.reserve(27);
  // Years 0..9999 print as 4 digits; others as a sign and 6 digits ("+275760", "-000001").
  if (date.year >= 0 && date.year <= 9999) {
    append_padded(out, date.year, 4);
  } else {
    out += date.year < 0 ? '-' : '+';
    append_padded(out, date.year < 0 ? -date.year : date.year, 6);
  }
  out += '-';
  append_padded(out, date.month, 2);
  out += '-';
  append_padded(out, date.day, 2);
  out += 'T';
  append_padded(out, in_day / 3'600'000, 2);
  out += ':';
  append_padded(out, in_day / 60'000 % 60, 2);
  out += ':';
  append_padded(out, in_day / 1000 % 60, 2);
  out += '.';
  append_padded(out, in_day % 1000, 3);
  out += 'Z';
  return out;
}

}  // namespace knit_server::routes

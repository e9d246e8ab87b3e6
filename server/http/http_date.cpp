// IMF-fixdate (RFC 9110 section 5.6.7) written by hand: strftime's %a and %b follow the
// locale, and the header's day and month names must be the English ones.
#include "http/http_date.hpp"

#include <ctime>

namespace knit_server {

namespace {

constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

void append_two(std::string& out, int n) {
  out += static_cast<char>('0' + n / 10);
  out += static_cast<char>('0' + n % 10);
}

struct cached_headers {
  std::chrono::sys_seconds second{};
  std::string lines;  // empty until the first call on this thread
};
thread_local cached_headers t_headers;

}  // namespace

std::string imf_fixdate(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::string out;
  out.reserve(29);
  out += kDays[tm.tm_wday];
  out += ", ";
  append_two(out, tm.tm_mday);
  out += ' ';
  out += kMonths[tm.tm_mon];
  out += ' ';
  out += std::to_string(tm.tm_year + 1900);
  out += ' ';
  append_two(out, tm.tm_hour);
  out += ':';
  append_two(out, tm.tm_min);
  out += ':';
  append_two(out, tm.tm_sec);
  out += " GMT";
  return out;
}

const std::string& server_and_date_headers(std::chrono::system_clock::time_point now) {
  const auto second = std::chrono::floor<std::chrono::seconds>(now);
  if (second != t_headers.second || t_headers.lines.empty()) {
    t_headers.lines = "Server: knit\r\nDate: " + imf_fixdate(now) + "\r\n";
    t_headers.second = second;
  }
  return t_headers.lines;
}

}  // namespace knit_server

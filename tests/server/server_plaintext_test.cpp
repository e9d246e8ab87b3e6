// GET /plaintext, TechEmpower's plaintext test ("Hello, World!" as text/plain with Content-Length,
// Server and Date; clients pipeline 16 requests a connection): the Date header's IMF-fixdate
// (RFC 9110 section 5.6.7), the response's exact bytes, and the real binary over real sockets
// answering 16 pipelined requests in order, in one write, with HEAD's responses bodiless.
#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "http/http_date.hpp"
#include "http/responses.hpp"
#include "http/router.hpp"
#include "http_client.hpp"
#include "server_fixture.hpp"

namespace knit_test {
namespace {

namespace http = boost::beast::http;
using namespace std::chrono_literals;

// IMF-fixdate exactly: day name, two-digit day, month name, four-digit year, GMT.
const std::regex kImfFixdate(
    R"((Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) )"
    R"(\d{4} \d{2}:\d{2}:\d{2} GMT)");

// The seconds since the epoch an IMF-fixdate names (strptime reads the English names in the C
// locale the tests run in); -1 when it does not parse whole.
std::int64_t parse_imf_fixdate(const std::string& text) {
  if (!std::regex_match(text, kImfFixdate)) return -1;
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr || *end != '\0') return -1;
  return static_cast<std::int64_t>(timegm(&tm));
}

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST(http_date, imf_fixdate_is_rfc_9110s_example) {
  // RFC 9110 section 5.6.7's own example: Sun, 06 Nov 1994 08:49:37 GMT is 784111777.
  const auto t = std::chrono::system_clock::time_point(784111777s) + 999ms;
  EXPECT_EQ(knit_server::imf_fixdate(t), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(parse_imf_fixdate(knit_server::imf_fixdate(t)), 784111777);
  // A single-digit day and hour keep their zeros; the month is the English one.
  EXPECT_EQ(knit_server::imf_fixdate(std::chrono::system_clock::time_point(1767315845s)),
            "Fri, 02 Jan 2026 01:04:05 GMT");
}

TEST(http_date, headers_follow_the_second) {
  const auto t = std::chrono::system_clock::time_point(784111777s);
  const std::string first = knit_server::server_and_date_headers(t);
  EXPECT_EQ(first, "Server: knit\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n");
  EXPECT_EQ(knit_server::server_and_date_headers(t + 999ms), first);
  EXPECT_EQ(knit_server::server_and_date_headers(t + 1s),
            "Server: knit\r\nDate: Sun, 06 Nov 1994 08:49:38 GMT\r\n");
}

TEST(plaintext_route, is_a_cheap_get_and_head_route) {
  using knit_server::match_route;
  using knit_server::route;
  EXPECT_EQ(match_route(http::verb::get, "/plaintext"), route::plaintext);
  EXPECT_EQ(match_route(http::verb::head, "/plaintext?x=1"), route::plaintext);
  EXPECT_EQ(match_route(http::verb::post, "/plaintext"), route::not_found);
  EXPECT_EQ(match_route(http::verb::get, "/plaintext/"), route::not_found);
  EXPECT_FALSE(knit_server::is_heavy(route::plaintext));
  EXPECT_FALSE(knit_server::is_ops_endpoint(route::plaintext));
  EXPECT_EQ(knit_server::to_string(route::plaintext), "plaintext");
}

TEST(plaintext_route, response_bytes_and_a_reused_response_loses_the_headers) {
  knit_server::response res;
  knit_server::fill_plaintext(res, std::chrono::system_clock::time_point(784111777s));
  std::string head;
  knit_server::serialize_head(head, res, knit_server::connection_header::close);
  EXPECT_EQ(head + res.body,
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n"
            "Server: knit\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nConnection: close\r\n\r\n"
            "Hello, World!");
  // The session reuses one response: the next route's head must not carry Server and Date.
  knit_server::fill_not_found(res);
  knit_server::serialize_head(head, res, knit_server::connection_header::none);
  EXPECT_EQ(head.find("Date:"), std::string::npos) << head;
}

// End to end, in the modes whose cheap routes run differently: the host thread (inline,
// pooled), several io threads (multi) and several event loops (asio_h4).
using server_plaintext = server_mode_test;

INSTANTIATE_TEST_SUITE_P(modes, server_plaintext,
                         ::testing::Values("inline", "pooled", "multi", "asio_h4"),
                         [](const auto& info) { return info.param; });

const std::regex kDateLine(R"(Date: ([^\r]*)\r\n)");

// Every Date header's value in `bytes`, in order.
std::vector<std::string> dates_in(const std::string& bytes) {
  std::vector<std::string> out;
  for (std::sregex_iterator it(bytes.begin(), bytes.end(), kDateLine), end; it != end; ++it)
    out.push_back((*it)[1].str());
  return out;
}

// A GET's (or a HEAD's) response as it must come, the date masked as "<date>".
std::string expected_response(bool head, bool close) {
  std::string s =
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n"
      "Server: knit\r\nDate: <date>\r\n";
  if (close) s += "Connection: close\r\n";
  s += "\r\n";
  if (!head) s += "Hello, World!";
  return s;
}

TEST_P(server_plaintext, AnswersHelloWorldWithAFreshDate) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  const std::int64_t before = now_s();
  ASSERT_TRUE(c.send(make_request("GET", "/plaintext", {}, {}, true)));
  std::string bytes;
  ASSERT_TRUE(c.wait_closed(&bytes));
  const std::int64_t after = now_s();
  const std::vector<std::string> dates = dates_in(bytes);
  ASSERT_EQ(dates.size(), 1u) << bytes;
  const std::int64_t date = parse_imf_fixdate(dates[0]);
  ASSERT_NE(date, -1) << "not an IMF-fixdate: " << dates[0];
  EXPECT_GE(date, before - 2) << dates[0];
  EXPECT_LE(date, after + 2) << dates[0];
  EXPECT_EQ(std::regex_replace(bytes, kDateLine, "Date: <date>\r\n"),
            expected_response(false, true));
}

TEST_P(server_plaintext, SixteenPipelinedRequestsAreAnsweredInOrderInOneWrite) {
  ASSERT_NO_FATAL_FAILURE(start());
  // GETs with a HEAD every fourth: a HEAD answered with a body, or answers out of order,
  // would shift every byte after it. The last asks for the close, so the stream ends there.
  constexpr int kDepth = 16;
  auto is_head = [](int i) { return i % 4 == 3; };
  std::string batch, expected;
  for (int i = 0; i < kDepth; ++i) {
    const bool close = i == kDepth - 1;
    batch += make_request(is_head(i) ? "HEAD" : "GET", "/plaintext", {}, {}, close);
    expected += expected_response(is_head(i), close);
  }
  const boost::json::object stats_before = read_stats(*server_);
  connection c(port());
  ASSERT_TRUE(c.send(batch));
  std::string bytes;
  ASSERT_TRUE(c.wait_closed(&bytes));
  EXPECT_EQ(std::regex_replace(bytes, kDateLine, "Date: <date>\r\n"), expected);
  for (const std::string& d : dates_in(bytes)) EXPECT_NE(parse_imf_fixdate(d), -1) << d;

  const boost::json::object stats_after = read_stats(*server_);
  EXPECT_EQ(requests_of(stats_after, "plaintext") - requests_of(stats_before, "plaintext"), kDepth);
  EXPECT_EQ(stats_after.at("writes").as_int64() - stats_before.at("writes").as_int64(), 1)
      << "a cheap route: the 16 responses should leave in one write";
}

}  // namespace
}  // namespace knit_test

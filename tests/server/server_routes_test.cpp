// End-to-end tests of what each route answers, and how a knit-stats line counts them: the
// real knit-server binary over real sockets, in inline, pooled, multi and asio mode, and in
// inline and asio mode with 2 and 4 event loops (KNIT_HOSTS).
//
// Every test starts its own server on a free port and stops it with SIGTERM, expecting exit
// code 0. No test asserts on timing: deadlines are generous and only stop a broken server
// from hanging the suite.
#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "http_client.hpp"
#include "server_fixture.hpp"

namespace knit_test {
namespace {

namespace json = boost::json;

std::size_t count_of(const std::string& text, char c) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), c));
}

// Expects `res` to have come back with `status` and `content_type`. Call through
// ASSERT_NO_FATAL_FAILURE.
void expect_typed(const std::optional<http_response>& res, int status,
                  const std::string& content_type, std::string_view context = {}) {
  ASSERT_NO_FATAL_FAILURE(expect_status(res, status, context));
  EXPECT_EQ(res->header("content-type"), content_type) << context;
}

// Expects `res` to be an error page: the status, the content type and the text.
void expect_error_page(const std::optional<http_response>& res, int status, const std::string& text,
                       const std::string& content_type, const std::string& context) {
  ASSERT_NO_FATAL_FAILURE(expect_typed(res, status, content_type, context));
  EXPECT_EQ(res->body, text) << context;
}

// The suite runs once per KNIT_MODE.
using server_routes = server_mode_test;

INSTANTIATE_TEST_SUITE_P(modes, server_routes,
                         ::testing::Values("inline", "pooled", "multi", "asio", "inline_h2",
                                           "inline_h4", "asio_h2", "asio_h4", "pooled_h2",
                                           "auto_h2"),
                         [](const auto& info) { return info.param; });

TEST_P(server_routes, PingAnswersJson) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  auto res = c.request("GET", "/ping");
  ASSERT_NO_FATAL_FAILURE(expect_typed(res, 200, "application/json"));
  const json::object body = json::parse(res->body).as_object();
  EXPECT_EQ(body.at("ok"), true);
  EXPECT_EQ(body.at("pong"), true);
  EXPECT_EQ(body.at("runtime"), "knit");
  EXPECT_TRUE(body.at("ts").is_string());
}

TEST_P(server_routes, PingIgnoresTheQueryString) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  ASSERT_NO_FATAL_FAILURE(expect_status(c.request("GET", "/ping?x=1&y=2"), 200));
}

TEST_P(server_routes, HeadPingSendsHeadersOnly) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  auto head = c.request("HEAD", "/ping");
  ASSERT_NO_FATAL_FAILURE(expect_status(head, 200));
  EXPECT_NE(head->header("content-length"), "0");
  EXPECT_TRUE(head->body.empty());
  // Had the server sent a body anyway, it would now be read as the next response's head.
  ASSERT_NO_FATAL_FAILURE(expect_status(c.request("GET", "/ping"), 200));
}

TEST_P(server_routes, SsrRendersTheEscapedName) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  auto res = c.request("POST", "/ssr", kSsrBody);
  ASSERT_NO_FATAL_FAILURE(expect_typed(res, 200, "text/html; charset=UTF-8"));
  EXPECT_EQ(res->body.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(res->body.find("&lt;Ari &amp; Co&gt;"), std::string::npos) << res->body;
  EXPECT_EQ(res->body.find("<Ari"), std::string::npos) << "the name must be escaped";
}

TEST_P(server_routes, SsrAcceptsAnyBody) {
  // The reference server renders defaults for a body that is not a JSON object.
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  auto res = c.request("POST", "/ssr", "not json");
  ASSERT_NO_FATAL_FAILURE(expect_status(res, 200));
  EXPECT_NE(res->body.find("Anonymous"), std::string::npos);
}

TEST_P(server_routes, JwtIssuesAThreePartToken) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  auto res = c.request("POST", "/jwt", kJwtBody);
  ASSERT_NO_FATAL_FAILURE(expect_typed(res, 200, "application/json; charset=utf-8"));
  const json::object body = json::parse(res->body).as_object();
  EXPECT_EQ(body.at("ok"), true);
  EXPECT_EQ(body.at("sub"), "u_42");
  const std::string token(body.at("token").as_string());
  EXPECT_EQ(count_of(token, '.'), 2u) << token;
  EXPECT_EQ(token.find(".."), std::string::npos) << token;
}

TEST_P(server_routes, JwtRejectsAnInvalidBodyWith400) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  for (const char* body : {"not json", "[]", R"({"user":{}})", R"({"user":{"id":""}})"}) {
    ASSERT_NO_FATAL_FAILURE(expect_error_page(c.request("POST", "/jwt", body), 400, "Bad request",
                                              "application/json; charset=utf-8", body));
  }
}

TEST_P(server_routes, UnknownPathIs404) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  for (const char* target : {"/", "/nope", "/ping/", "/pingx", "/ssr/extra"}) {
    ASSERT_NO_FATAL_FAILURE(expect_error_page(c.request("GET", target), 404, "404 Not Found",
                                              "text/plain; charset=UTF-8", target));
  }
}

TEST_P(server_routes, WrongMethodOnAKnownPathIs404) {
  // Hono answers a method mismatch with its notFound handler, not 405.
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"GET", "/ssr"}, {"GET", "/jwt"}, {"POST", "/ping"}, {"PUT", "/ssr"}, {"DELETE", "/ping"}};
  for (const auto& [method, target] : cases) {
    auto res = c.request(method, target);
    ASSERT_TRUE(res) << method << ' ' << target;
    EXPECT_EQ(res->status, 404) << method << ' ' << target;
  }
}

TEST_P(server_routes, Sigusr1PrintsAParseableStatsLine) {
  ASSERT_NO_FATAL_FAILURE(start());
  {
    connection c(port());
    ASSERT_TRUE(c.request("GET", "/ping"));
    ASSERT_TRUE(c.request("GET", "/ping"));
    ASSERT_TRUE(c.request("POST", "/ssr", kSsrBody));
    ASSERT_TRUE(c.request("POST", "/jwt", kJwtBody));
    ASSERT_TRUE(c.request("GET", "/nope"));
  }
  const json::object stats = read_stats(*server_);
  EXPECT_EQ(stats.at("mode").as_string(), mode());
  // One entry per event loop, adding up to the total; the one connection was on one of them.
  const std::vector<std::int64_t> per_host = host_requests(stats);
  EXPECT_EQ(per_host.size(), static_cast<std::size_t>(hosts())) << json::serialize(stats);
  EXPECT_EQ(std::accumulate(per_host.begin(), per_host.end(), std::int64_t{0}), 5);
  EXPECT_EQ(std::count(per_host.begin(), per_host.end(), 5), 1) << json::serialize(stats);
  EXPECT_EQ(requests_of(stats, "ping"), 2);
  EXPECT_EQ(requests_of(stats, "ssr"), 1);
  EXPECT_EQ(requests_of(stats, "jwt"), 1);
  EXPECT_EQ(requests_of(stats, "other"), 1);
  if (pooled()) {
    const json::object& pool = stats.at("pool").as_object();
    EXPECT_GE(pool.at("threads").as_int64(), 1);
    EXPECT_EQ(pool.at("totals").at("calls_completed").as_int64(), 2);
    EXPECT_TRUE(pool.at("workers").is_array());
  } else if (mode() == "auto") {  // a pool, whichever way its policy sent the two calls
    EXPECT_TRUE(stats.at("pool").is_object());
  } else {
    EXPECT_TRUE(stats.at("pool").is_null());
  }
}

}  // namespace
}  // namespace knit_test

// End-to-end tests of pipelined requests in knit-server (RFC 9112 section 9.3.2: a server
// answers pipelined requests in the order received): the responses to requests that arrive
// together leave together, in one write, with the same bytes as when each request is sent
// alone; a half-sent request behind them still times out; the real binary over real sockets.
//
// "One write" is the server's own count (knit-stats "writes": the write system calls that
// sent responses), not what the client happens to receive in one recv: the kernel may
// coalesce several writes into one read.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "http_client.hpp"
#include "server_fixture.hpp"

namespace knit_test {
namespace {

using server_pipelining = server_mode_test;

INSTANTIATE_TEST_SUITE_P(modes, server_pipelining,
                         ::testing::Values("inline", "pooled", "multi", "asio_h4"),
                         [](const auto& info) { return info.param; });

// Cheap requests, answered on the connection's thread, whose responses do not depend on the
// clock: /livez ("ok\n"), a 404 ("404 Not Found"), and HEAD /livez (the head alone).
enum class cheap { livez, missing, head_livez };

std::string request_for(cheap kind, int i, bool close) {
  switch (kind) {
    case cheap::livez: return make_request("GET", "/livez", {}, {}, close);
    case cheap::missing: return make_request("GET", "/missing/" + std::to_string(i), {}, {}, close);
    case cheap::head_livez: return make_request("HEAD", "/livez", {}, {}, close);
  }
  return {};
}

cheap kind_of(int i) { return static_cast<cheap>(i % 3); }

// Reads one response's exact bytes: the head, then the body the kind says it has.
std::optional<std::string> read_raw(connection& c, cheap kind) {
  auto head = c.read_until("\r\n\r\n");
  if (!head) return std::nullopt;
  if (kind == cheap::head_livez) return head;
  auto body = c.read_until(kind == cheap::livez ? std::string_view("ok\n")
                                                : std::string_view("404 Not Found"));
  if (!body) return std::nullopt;
  return *head + *body;
}

std::int64_t writes_of(const boost::json::object& stats) { return stats.at("writes").as_int64(); }

constexpr int kDepth = 16;

TEST_P(server_pipelining, SixteenRequestsInOneSendAreAnsweredInOrderInOneWrite) {
  ASSERT_NO_FATAL_FAILURE(start());

  // Each request alone, one after the other on one connection, the last with
  // Connection: close: the bytes pipelining must reproduce.
  std::string alone;
  {
    connection c(port());
    for (int i = 0; i < kDepth; ++i) {
      ASSERT_TRUE(c.send(request_for(kind_of(i), i, i == kDepth - 1)));
      auto raw = read_raw(c, kind_of(i));
      ASSERT_TRUE(raw) << "request " << i << " alone";
      alone += *raw;
    }
    EXPECT_TRUE(c.wait_closed());
  }

  // Every knit-stats line counts the writes so far; no other connection is open now.
  const std::int64_t writes_before = writes_of(read_stats(*server_));

  // The same 16 requests in one send: they arrive together.
  std::string batch;
  for (int i = 0; i < kDepth; ++i) batch += request_for(kind_of(i), i, i == kDepth - 1);
  connection c(port());
  ASSERT_TRUE(c.send(batch));
  std::string pipelined;
  for (int i = 0; i < kDepth; ++i) {
    auto raw = read_raw(c, kind_of(i));
    ASSERT_TRUE(raw) << "pipelined request " << i;
    pipelined += *raw;
  }
  std::string after;
  EXPECT_TRUE(c.wait_closed(&after));
  EXPECT_EQ(after, "");

  EXPECT_EQ(pipelined, alone);
  EXPECT_EQ(writes_of(read_stats(*server_)) - writes_before, 1)
      << "the 16 responses should leave in one write";
}

TEST_P(server_pipelining, AHeavyRequestInTheBatchKeepsTheOrder) {
  ASSERT_NO_FATAL_FAILURE(start());
  // /livez, then /jwt (on a worker in pooled mode), then /livez: the responses held back
  // before the /jwt leave before it, and the /livez after it follows it.
  connection c(port());
  ASSERT_TRUE(c.send(make_request("GET", "/livez") + make_request("GET", "/livez") +
                     make_request("POST", "/jwt", kJwtBody) + make_request("GET", "/livez")));
  http_response res;
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(c.read_response(res), read_outcome::complete) << i;
    EXPECT_EQ(res.body, "ok\n") << i;
  }
  ASSERT_EQ(c.read_response(res), read_outcome::complete);
  EXPECT_NE(res.body.find("\"token\""), std::string::npos) << res.body;
  ASSERT_EQ(c.read_response(res), read_outcome::complete);
  EXPECT_EQ(res.body, "ok\n");
}

TEST_P(server_pipelining, HalfARequestBehindWholeOnesStillTimesOut) {
  ASSERT_NO_FATAL_FAILURE(start({{"KNIT_IDLE_TIMEOUT_MS", "500"}}));
  // Three whole requests and the start of a fourth, never finished: the three are answered,
  // then the idle timeout closes the connection without a fourth response.
  connection c(port());
  ASSERT_TRUE(c.send(make_request("GET", "/livez") + make_request("GET", "/livez") +
                     make_request("GET", "/livez") + "GET /livez HTTP/1.1\r\nHo"));
  http_response res;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(c.read_response(res), read_outcome::complete) << i;
    EXPECT_EQ(res.body, "ok\n") << i;
  }
  std::string after;
  EXPECT_TRUE(c.wait_closed(&after));
  EXPECT_EQ(after, "");
}

TEST_P(server_pipelining, ResponsesHeldForABatchAreWrittenWhenTheNextRequestNeverEnds) {
  ASSERT_NO_FATAL_FAILURE(start());
  // A /livez, then a GET whose body is cut short by the client's end of stream: the /livez's
  // response, held to leave with the next one, still goes out; then the server closes.
  connection c(port());
  ASSERT_TRUE(c.send(make_request("GET", "/livez") +
                     "GET /livez HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabcde"));
  c.shutdown_send();
  http_response res;
  ASSERT_EQ(c.read_response(res), read_outcome::complete);
  EXPECT_EQ(res.body, "ok\n");
  std::string after;
  EXPECT_TRUE(c.wait_closed(&after));
  EXPECT_EQ(after, "");
}

}  // namespace
}  // namespace knit_test

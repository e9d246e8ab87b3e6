// End-to-end tests of a connection's life in knit-server: keep-alive, pipelining, 100-continue,
// HTTP/1.0's close, the idle timeout, and many clients at once. The real binary over real
// sockets, in inline, pooled and multi mode, and in asio mode with 4 event loops.
//
// As in every end-to-end test, no assertion is on timing: deadlines only stop a broken
// server from hanging the suite.
#include <atomic>
#include <latch>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "http_client.hpp"
#include "server_fixture.hpp"

namespace knit_test {
namespace {

// The suite runs once per KNIT_MODE.
using server_connections = server_mode_test;

// asio_h4: the sweep and the stop reach connections on four event loops.
INSTANTIATE_TEST_SUITE_P(modes, server_connections,
                         ::testing::Values("inline", "pooled", "multi", "asio_h4", "pooled_h4"),
                         [](const auto& info) { return info.param; });

TEST_P(server_connections, SlowClientIsDisconnected) {
  ASSERT_NO_FATAL_FAILURE(start({{"KNIT_IDLE_TIMEOUT_MS", "500"}}));
  // Half a request header, then silence: the server must not wait forever.
  connection slow(port());
  ASSERT_TRUE(slow.send("GET /ping HTTP/1.1\r\nHo"));
  expect_closed_silently(slow);

  // An idle keep-alive connection goes the same way.
  connection idle(port());
  ASSERT_TRUE(idle.request("GET", "/ping"));
  EXPECT_TRUE(idle.wait_closed());
}

TEST_P(server_connections, KeepAliveServesManyRequestsOnOneConnection) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  for (int i = 0; i < 10; ++i) {
    auto ping = c.request("GET", "/ping");
    ASSERT_NO_FATAL_FAILURE(expect_status(ping, 200, std::to_string(i)));
    EXPECT_EQ(ping->header("connection"), "");  // HTTP/1.1 keep-alive needs no header
    auto ssr = c.request("POST", "/ssr", kSsrBody);
    ASSERT_NO_FATAL_FAILURE(expect_status(ssr, 200, std::to_string(i)));
  }
}

TEST_P(server_connections, ExpectContinueGetsAGoAhead) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  const std::string body = kJwtBody;
  // The header alone; the client waits for "100 Continue" before sending the body.
  ASSERT_TRUE(c.send("POST /jwt HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n"));
  EXPECT_EQ(c.read_until("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_NO_FATAL_FAILURE(expect_status(c.exchange(body), 200));

  // A body over the limit is refused at once, without a go-ahead.
  const std::string too_big =
      "POST /jwt HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1000000\r\n\r\n";
  ASSERT_NO_FATAL_FAILURE(expect_status(c.exchange(too_big), 413));
}

TEST_P(server_connections, Http10ClosesUnlessKeepAliveIsAsked) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  auto kept = c.exchange("GET /ping HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->header("connection"), "keep-alive");
  http_response res;
  ASSERT_NO_FATAL_FAILURE(expect_answer_then_close(c, "GET /ping HTTP/1.0\r\n\r\n", 200, &res));
  EXPECT_EQ(res.header("connection"), "close");
}

TEST_P(server_connections, PipelinedRequestsAreAnsweredInOrder) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  // Heavy and cheap routes mixed: in pooled mode /ssr and /jwt finish on a worker later than
  // /ping would, yet the responses must leave in request order.
  const std::string batch = make_request("POST", "/ssr", R"({"name":"first"})") +
                            make_request("GET", "/ping") + make_request("POST", "/jwt", kJwtBody) +
                            make_request("GET", "/missing");
  ASSERT_TRUE(c.send(batch));

  http_response res;
  ASSERT_EQ(c.read_response(res), read_outcome::complete);
  EXPECT_EQ(res.status, 200);
  EXPECT_NE(res.body.find("first"), std::string::npos);
  ASSERT_EQ(c.read_response(res), read_outcome::complete);
  EXPECT_EQ(res.status, 200);
  EXPECT_NE(res.body.find("\"pong\":true"), std::string::npos);
  ASSERT_EQ(c.read_response(res), read_outcome::complete);
  EXPECT_EQ(res.status, 200);
  EXPECT_NE(res.body.find("\"token\""), std::string::npos);
  ASSERT_EQ(c.read_response(res), read_outcome::complete);
  EXPECT_EQ(res.status, 404);
}

TEST_P(server_connections, ManyConcurrentClients) {
  // What is under test is 50 connections served at once, not admission: with KNIT_MAX_QUEUE_MS
  // at its default (250 ms) a slow machine or a sanitizer's build sheds some of the 25 heavy
  // calls queued on 2 workers with 503, as it should (admission has tests of its own).
  ASSERT_NO_FATAL_FAILURE(start({{"KNIT_THREADS", "2"}, {"KNIT_MAX_QUEUE_MS", "0"}}));
  constexpr int kClients = 50;
  constexpr int kRequests = 20;
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  std::latch go(kClients);
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      connection c(port());
      go.arrive_and_wait();
      for (int i = 0; i < kRequests; ++i) {
        std::optional<http_response> res;
        int expected = 200;
        switch ((t + i) % 4) {
          case 0: res = c.request("GET", "/ping"); break;
          case 1: res = c.request("POST", "/ssr", kSsrBody); break;
          case 2: res = c.request("POST", "/jwt", kJwtBody); break;
          default:
            res = c.request("GET", "/nope");
            expected = 404;
            break;
        }
        if (res && res->status == expected) {
          ++ok;
        } else {
          ++failed;
          ADD_FAILURE() << "client " << t << ", request " << i << ": "
                        << (res ? "status " + std::to_string(res->status) + " " + res->body
                                : std::string("no response"));
        }
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(ok.load(), kClients * kRequests);
}

}  // namespace
}  // namespace knit_test

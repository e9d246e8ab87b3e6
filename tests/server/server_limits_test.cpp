// End-to-end tests of what knit-server refuses: a body or header over its limit, a malformed
// request, a connection over KNIT_MAX_CONNECTIONS, a call the full pool cannot take, and a
// bad setting at start-up. The real binary over real sockets, in inline, pooled and multi
// mode where the limit is not the pool's, and in inline mode with 4 event loops.
//
// As in every end-to-end test, no assertion is on timing: deadlines only stop a broken
// server from hanging the suite.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "http_client.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"

namespace knit_test {
namespace {

// The suite runs once per KNIT_MODE.
using server_limits = server_mode_test;

// inline_h4: KNIT_MAX_CONNECTIONS holds for the four event loops together.
INSTANTIATE_TEST_SUITE_P(modes, server_limits,
                         ::testing::Values("inline", "pooled", "multi", "inline_h4"),
                         [](const auto& info) { return info.param; });

TEST_P(server_limits, BodyAt64KiBIsAccepted) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  // 64 KiB of spaces: not a JSON object, so /jwt answers 400 "Bad request" - but not 413.
  ASSERT_NO_FATAL_FAILURE(
      expect_status(c.request("POST", "/jwt", std::string(64 * 1024, ' ')), 400));
}

TEST_P(server_limits, BodyOver64KiBIs413ThenClose) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  http_response res;
  ASSERT_NO_FATAL_FAILURE(expect_answer_then_close(
      c, make_request("POST", "/ssr", std::string(64 * 1024 + 1, 'a')), 413, &res));
  EXPECT_EQ(res.header("connection"), "close");
}

TEST_P(server_limits, HugeHeaderIs431ThenClose) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  const std::string big = "X-Big: " + std::string(9000, 'h') + "\r\n";
  ASSERT_NO_FATAL_FAILURE(expect_answer_then_close(c, make_request("GET", "/ping", {}, big), 431));
}

TEST_P(server_limits, ManyHeaderFieldsUnderTheLimitAreFine) {
  // Far more fields than the session's header arena holds: the rest comes from the heap.
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  std::string extra;
  for (int i = 0; i < 80; ++i) {
    extra += "X-Field-" + std::to_string(i) + ": " + std::string(40, 'v') + "\r\n";
  }
  for (int round = 0; round < 3; ++round) {
    ASSERT_NO_FATAL_FAILURE(expect_status(c.exchange(make_request("POST", "/jwt", kJwtBody, extra)),
                                          200, std::to_string(round)));
  }
}

TEST_P(server_limits, MalformedRequestIs400ThenClose) {
  ASSERT_NO_FATAL_FAILURE(start());
  for (const char* raw : {"GARBAGE\r\n\r\n", "GET /ping HTTP/9.9\r\n\r\n",
                          "GET /ping HTTP/1.1\r\nNo colon here\r\n\r\n",
                          "POST /jwt HTTP/1.1\r\nContent-Length: nope\r\n\r\n"}) {
    connection c(port());
    ASSERT_NO_FATAL_FAILURE(expect_answer_then_close(c, raw, 400));
  }
  // The server is still fine.
  connection c(port());
  ASSERT_NO_FATAL_FAILURE(expect_status(c.request("GET", "/ping"), 200));
}

TEST_P(server_limits, ConnectionsBeyondTheLimitAreClosed) {
  ASSERT_NO_FATAL_FAILURE(start({{"KNIT_MAX_CONNECTIONS", "2"}}));
  auto first = std::make_unique<connection>(port());
  connection second(port());
  ASSERT_TRUE(first->request("GET", "/ping"));
  ASSERT_TRUE(second.request("GET", "/ping"));

  connection third(port());
  ASSERT_TRUE(third.connected());  // the kernel accepts; the server then closes it
  expect_closed_silently(third);

  // Once a connection goes away there is room again. The server notices the close a
  // moment later, so retry until a deadline.
  first.reset();
  bool served = false;
  for (int attempt = 0; attempt < 200 && !served; ++attempt) {
    connection again(port());
    served = again.request("GET", "/ping").has_value();
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_TRUE(served);
}

TEST(pooled_limits, FullPoolAnswers503WithRetryAfter) {
  // One worker, one pending call at most, and each /ssr takes 0.4 s of CPU: of a burst of
  // concurrent /ssr requests, the first is accepted and the rest find the pool full.
  server_process server({{"KNIT_MODE", "pooled"},
                         {"KNIT_THREADS", "1"},
                         {"KNIT_MAX_PENDING", "1"},
                         {"KNIT_SSR_COST_US", "400000"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();

  constexpr int kClients = 12;
  std::vector<http_response> responses(kClients);
  std::vector<read_outcome> outcomes(kClients, read_outcome::timed_out);
  std::latch go(kClients);
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      connection c(server.port(), std::chrono::seconds(30));
      go.arrive_and_wait();
      if (c.send(make_request("POST", "/ssr", kSsrBody))) {
        outcomes[t] = c.read_response(responses[t]);
      }
    });
  }
  for (auto& t : clients) t.join();

  int ok = 0;
  int overloaded = 0;
  for (int t = 0; t < kClients; ++t) {
    ASSERT_EQ(outcomes[t], read_outcome::complete) << "client " << t;
    if (responses[t].status == 503) {
      ++overloaded;
      EXPECT_EQ(responses[t].header("retry-after"), "1");
    } else {
      EXPECT_EQ(responses[t].status, 200) << "client " << t;
      ++ok;
    }
  }
  EXPECT_GE(overloaded, 1);
  EXPECT_GE(ok, 1);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

struct bad_setting {
  const char* name;
  const char* value;
};

class bad_environment : public ::testing::TestWithParam<bad_setting> {};

TEST_P(bad_environment, ExitsWith2AndNamesTheVariable) {
  const bad_setting bad = GetParam();
  server_process server(env_map{{bad.name, bad.value}});
  EXPECT_EQ(server.wait_exit(), 2);
  const std::string err = server.stderr_text();
  EXPECT_NE(err.find(bad.name), std::string::npos) << err;
  EXPECT_NE(err.find(bad.value), std::string::npos) << err;
}

INSTANTIATE_TEST_SUITE_P(
    settings, bad_environment,
    ::testing::Values(bad_setting{"PORT", "abc"}, bad_setting{"PORT", "70000"},
                      bad_setting{"PORT", "-1"}, bad_setting{"HOST", "not-an-address"},
                      bad_setting{"KNIT_MODE", "turbo"}, bad_setting{"KNIT_COST_PROFILE", "deno"},
                      bad_setting{"KNIT_SSR_COST_US", "-5"}, bad_setting{"KNIT_JWT_COST_US", "1e3"},
                      bad_setting{"KNIT_MAX_CONNECTIONS", "0"},
                      bad_setting{"KNIT_IDLE_TIMEOUT_MS", "soon"},
                      bad_setting{"KNIT_MAX_QUEUE_MS", "250ms"},
                      bad_setting{"KNIT_MAX_QUEUED", "-1"}, bad_setting{"KNIT_THREADS", "many"}),
    [](const auto& info) {
      std::string name = std::string(info.param.name) + "_" + std::to_string(info.index);
      std::replace_if(
          name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
      return name;
    });

}  // namespace
}  // namespace knit_test

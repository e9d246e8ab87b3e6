// End-to-end tests: the real knit-server binary over real sockets, in inline, pooled and multi mode.
//
// Every test starts its own server on a free port and stops it with SIGTERM, expecting exit
// code 0. No test asserts on timing: deadlines are generous and only stop a broken server
// from hanging the suite.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <latch>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "http_client.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"

namespace knit_test {
namespace {

namespace json = boost::json;

constexpr const char* kSsrBody = R"({"name":"<Ari & Co>","plan":"pro","bio":"Building on Knitting","projects":17})";
constexpr const char* kJwtBody = R"({"user":{"id":"u_42","email":"ari@example.com","role":"admin"},"ttlSec":900})";

std::size_t count_of(const std::string& text, char c) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), c));
}

std::int64_t requests_of(const json::object& stats, const char* route) {
  return stats.at("requests").at(route).as_int64();
}

// The suite runs once per KNIT_MODE.
using ServerTest = server_mode_test;

INSTANTIATE_TEST_SUITE_P(Modes, ServerTest, ::testing::Values("inline", "pooled", "multi"),
                         [](const auto& info) { return info.param; });

// ---- Routes ---------------------------------------------------------------------------

TEST_P(ServerTest, PingAnswersJson) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  auto res = c.request("GET", "/ping");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->header("content-type"), "application/json");
  const json::object body = json::parse(res->body).as_object();
  EXPECT_EQ(body.at("ok"), true);
  EXPECT_EQ(body.at("pong"), true);
  EXPECT_EQ(body.at("runtime"), "knit");
  EXPECT_TRUE(body.at("ts").is_string());
}

TEST_P(ServerTest, PingIgnoresTheQueryString) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  auto res = c.request("GET", "/ping?x=1&y=2");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_P(ServerTest, HeadPingSendsHeadersOnly) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  auto head = c.request("HEAD", "/ping");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_NE(head->header("content-length"), "0");
  EXPECT_TRUE(head->body.empty());
  // Had the server sent a body anyway, it would now be read as the next response's head.
  auto next = c.request("GET", "/ping");
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200);
}

TEST_P(ServerTest, SsrRendersTheEscapedName) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  auto res = c.request("POST", "/ssr", kSsrBody);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->header("content-type"), "text/html; charset=UTF-8");
  EXPECT_EQ(res->body.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(res->body.find("&lt;Ari &amp; Co&gt;"), std::string::npos) << res->body;
  EXPECT_EQ(res->body.find("<Ari"), std::string::npos) << "the name must be escaped";
}

TEST_P(ServerTest, SsrAcceptsAnyBody) {
  // The seed renders defaults for a body that is not a JSON object.
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  auto res = c.request("POST", "/ssr", "not json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_NE(res->body.find("Anonymous"), std::string::npos);
}

TEST_P(ServerTest, JwtIssuesAThreePartToken) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  auto res = c.request("POST", "/jwt", kJwtBody);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->header("content-type"), "application/json; charset=utf-8");
  const json::object body = json::parse(res->body).as_object();
  EXPECT_EQ(body.at("ok"), true);
  EXPECT_EQ(body.at("sub"), "u_42");
  const std::string token(body.at("token").as_string());
  EXPECT_EQ(count_of(token, '.'), 2u) << token;
  EXPECT_EQ(token.find(".."), std::string::npos) << token;
}

TEST_P(ServerTest, JwtRejectsAnInvalidBodyWith400) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  for (const char* body : {"not json", "[]", R"({"user":{}})", R"({"user":{"id":""}})"}) {
    auto res = c.request("POST", "/jwt", body);
    ASSERT_TRUE(res) << body;
    EXPECT_EQ(res->status, 400) << body;
    EXPECT_EQ(res->body, "Bad request") << body;
    EXPECT_EQ(res->header("content-type"), "application/json; charset=utf-8") << body;
  }
}

TEST_P(ServerTest, UnknownPathIs404) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  for (const char* target : {"/", "/nope", "/ping/", "/pingx", "/ssr/extra"}) {
    auto res = c.request("GET", target);
    ASSERT_TRUE(res) << target;
    EXPECT_EQ(res->status, 404) << target;
    EXPECT_EQ(res->body, "404 Not Found") << target;
    EXPECT_EQ(res->header("content-type"), "text/plain; charset=UTF-8") << target;
  }
}

TEST_P(ServerTest, WrongMethodOnAKnownPathIs404) {
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

// ---- Limits and malformed input ---------------------------------------------------------

TEST_P(ServerTest, BodyAt64KiBIsAccepted) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  // 64 KiB of spaces: not a JSON object, so /jwt answers 400 "Bad request" - but not 413.
  auto res = c.request("POST", "/jwt", std::string(64 * 1024, ' '));
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
}

TEST_P(ServerTest, BodyOver64KiBIs413ThenClose) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  ASSERT_TRUE(c.send(make_request("POST", "/ssr", std::string(64 * 1024 + 1, 'a'))));
  http_response res;
  ASSERT_EQ(c.read_response(res), read_outcome::complete);
  EXPECT_EQ(res.status, 413);
  EXPECT_EQ(res.header("connection"), "close");
  EXPECT_TRUE(c.wait_closed());
}

TEST_P(ServerTest, HugeHeaderIs431ThenClose) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  const std::string big = "X-Big: " + std::string(9000, 'h') + "\r\n";
  ASSERT_TRUE(c.send(make_request("GET", "/ping", {}, big)));
  http_response res;
  ASSERT_EQ(c.read_response(res), read_outcome::complete);
  EXPECT_EQ(res.status, 431);
  EXPECT_TRUE(c.wait_closed());
}

TEST_P(ServerTest, ManyHeaderFieldsUnderTheLimitAreFine) {
  // Far more fields than the session's header arena holds: the rest comes from the heap.
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  std::string extra;
  for (int i = 0; i < 80; ++i) extra += "X-Field-" + std::to_string(i) + ": " + std::string(40, 'v') + "\r\n";
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(c.send(make_request("POST", "/jwt", kJwtBody, extra)));
    http_response res;
    ASSERT_EQ(c.read_response(res), read_outcome::complete);
    EXPECT_EQ(res.status, 200);
  }
}

TEST_P(ServerTest, MalformedRequestIs400ThenClose) {
  ASSERT_NO_FATAL_FAILURE(start());
  for (const char* raw : {"GARBAGE\r\n\r\n", "GET /ping HTTP/9.9\r\n\r\n",
                          "GET /ping HTTP/1.1\r\nNo colon here\r\n\r\n",
                          "POST /jwt HTTP/1.1\r\nContent-Length: nope\r\n\r\n"}) {
    connection c(port());
    ASSERT_TRUE(c.send(raw)) << raw;
    http_response res;
    ASSERT_EQ(c.read_response(res), read_outcome::complete) << raw;
    EXPECT_EQ(res.status, 400) << raw;
    EXPECT_TRUE(c.wait_closed()) << raw;
  }
  // The server is still fine.
  connection c(port());
  auto res = c.request("GET", "/ping");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_P(ServerTest, SlowClientIsDisconnected) {
  ASSERT_NO_FATAL_FAILURE(start({{"KNIT_IDLE_TIMEOUT_MS", "500"}}));
  // Half a request header, then silence: the server must not wait forever.
  connection slow(port());
  ASSERT_TRUE(slow.send("GET /ping HTTP/1.1\r\nHo"));
  std::string received;
  EXPECT_TRUE(slow.wait_closed(&received));
  EXPECT_EQ(received, "");

  // An idle keep-alive connection goes the same way.
  connection idle(port());
  ASSERT_TRUE(idle.request("GET", "/ping"));
  EXPECT_TRUE(idle.wait_closed());
}

TEST_P(ServerTest, ConnectionsBeyondTheLimitAreClosed) {
  ASSERT_NO_FATAL_FAILURE(start({{"KNIT_MAX_CONNECTIONS", "2"}}));
  auto first = std::make_unique<connection>(port());
  connection second(port());
  ASSERT_TRUE(first->request("GET", "/ping"));
  ASSERT_TRUE(second.request("GET", "/ping"));

  connection third(port());
  ASSERT_TRUE(third.connected());  // the kernel accepts; the server then closes it
  std::string received;
  EXPECT_TRUE(third.wait_closed(&received));
  EXPECT_EQ(received, "");

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

// ---- Keep-alive, pipelining, concurrency ----------------------------------------------

TEST_P(ServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  for (int i = 0; i < 10; ++i) {
    auto ping = c.request("GET", "/ping");
    ASSERT_TRUE(ping) << i;
    EXPECT_EQ(ping->status, 200);
    EXPECT_EQ(ping->header("connection"), "");  // HTTP/1.1 keep-alive needs no header
    auto ssr = c.request("POST", "/ssr", kSsrBody);
    ASSERT_TRUE(ssr) << i;
    EXPECT_EQ(ssr->status, 200);
  }
}

TEST_P(ServerTest, ExpectContinueGetsAGoAhead) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  const std::string body = kJwtBody;
  // The header alone; the client waits for "100 Continue" before sending the body.
  ASSERT_TRUE(c.send("POST /jwt HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n"));
  EXPECT_EQ(c.read_until("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(c.send(body));
  http_response res;
  ASSERT_EQ(c.read_response(res), read_outcome::complete);
  EXPECT_EQ(res.status, 200);

  // A body over the limit is refused at once, without a go-ahead.
  ASSERT_TRUE(c.send("POST /jwt HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                     "Content-Length: 1000000\r\n\r\n"));
  ASSERT_EQ(c.read_response(res), read_outcome::complete);
  EXPECT_EQ(res.status, 413);
}

TEST_P(ServerTest, Http10ClosesUnlessKeepAliveIsAsked) {
  ASSERT_NO_FATAL_FAILURE(start());
  {
    connection c(port());
    ASSERT_TRUE(c.send("GET /ping HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
    http_response res;
    ASSERT_EQ(c.read_response(res), read_outcome::complete);
    EXPECT_EQ(res.header("connection"), "keep-alive");
    ASSERT_TRUE(c.send("GET /ping HTTP/1.0\r\n\r\n"));
    ASSERT_EQ(c.read_response(res), read_outcome::complete);
    EXPECT_EQ(res.status, 200);
    EXPECT_EQ(res.header("connection"), "close");
    EXPECT_TRUE(c.wait_closed());
  }
}

TEST_P(ServerTest, PipelinedRequestsAreAnsweredInOrder) {
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

TEST_P(ServerTest, ManyConcurrentClients) {
  ASSERT_NO_FATAL_FAILURE(start({{"KNIT_THREADS", "2"}}));
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
          default: res = c.request("GET", "/nope"); expected = 404; break;
        }
        (res && res->status == expected ? ok : failed)++;
      }
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(ok.load(), kClients * kRequests);
}

// ---- Stats and stopping -----------------------------------------------------------------

TEST_P(ServerTest, Sigusr1PrintsAParseableStatsLine) {
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
  EXPECT_EQ(stats.at("mode").as_string(), GetParam());
  EXPECT_EQ(requests_of(stats, "ping"), 2);
  EXPECT_EQ(requests_of(stats, "ssr"), 1);
  EXPECT_EQ(requests_of(stats, "jwt"), 1);
  EXPECT_EQ(requests_of(stats, "other"), 1);
  if (pooled()) {
    const json::object& pool = stats.at("pool").as_object();
    EXPECT_GE(pool.at("threads").as_int64(), 1);
    EXPECT_EQ(pool.at("totals").at("calls_completed").as_int64(), 2);
    EXPECT_TRUE(pool.at("workers").is_array());
  } else {
    EXPECT_TRUE(stats.at("pool").is_null());
  }
}

TEST_P(ServerTest, SigtermFinishesTheRequestInProgress) {
  ASSERT_NO_FATAL_FAILURE(start({{"KNIT_SSR_COST_US", "300000"}}));
  // An idle keep-alive connection: the stop must close it rather than wait for it.
  auto idle = std::make_unique<connection>(port());
  ASSERT_TRUE(idle->request("GET", "/ping"));

  // A slow /ssr, in progress when SIGTERM arrives. The stats line proves the server has the
  // request. (Inline mode can print it only after the route ran, since the route holds the
  // host thread; the response may then already be on its way, which must work too.)
  auto busy = std::make_unique<connection>(port());
  ASSERT_TRUE(busy->send(make_request("POST", "/ssr", kSsrBody)));
  for (int i = 0; i < 200 && requests_of(read_stats(*server_), "ssr") < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  server_->signal(SIGTERM);

  http_response res;
  ASSERT_EQ(busy->read_response(res), read_outcome::complete);
  EXPECT_EQ(res.status, 200);
  EXPECT_NE(res.body.find("&lt;Ari &amp; Co&gt;"), std::string::npos);
  // Pooled: the worker was still running when the stop began, so the response announces
  // the close.
  if (pooled()) {
    EXPECT_EQ(res.header("connection"), "close");
  }
  EXPECT_TRUE(busy->wait_closed());
  EXPECT_TRUE(idle->wait_closed());
  // Close our ends too, as a real client does on end of stream: the server waits (a little
  // while) for that before it lets a connection go.
  busy.reset();
  idle.reset();
  EXPECT_EQ(server_->wait_exit(), 0) << server_->stderr_text();
}

TEST_P(ServerTest, SigtermUnderLoadLosesNoStartedResponse) {
  ASSERT_NO_FATAL_FAILURE(start({{"KNIT_SSR_COST_US", "2000"}, {"KNIT_THREADS", "2"}}));
  constexpr int kClients = 16;
  std::atomic<int> answered{0};
  std::atomic<int> lost{0};       // a response cut short, garbled, or wrong: must stay 0
  std::atomic<int> clean_ends{0}; // closed before any byte of a response: allowed
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      // Keep requesting, reconnecting after each close, until connecting fails (the server
      // has stopped listening) or something goes wrong.
      for (;;) {
        connection c(port());
        if (!c.connected()) return;
        for (int i = 0;; ++i) {
          const bool heavy = (t + i) % 2 == 0;
          if (!c.send(heavy ? make_request("POST", "/ssr", kSsrBody) : make_request("GET", "/ping"))) {
            ++clean_ends;  // the server closed first: nothing of a response was sent
            break;
          }
          http_response res;
          const read_outcome outcome = c.read_response(res);
          if (outcome == read_outcome::closed_cleanly) {
            ++clean_ends;
            break;
          }
          if (outcome != read_outcome::complete || res.status != 200) {
            ADD_FAILURE() << "client " << t << ": " << to_string(outcome) << " status "
                          << res.status;
            ++lost;
            return;
          }
          ++answered;
          if (res.header("connection") == "close") break;
        }
      }
    });
  }
  // Let the load run, then stop the server in the middle of it.
  for (int i = 0; i < 2000 && answered.load() < 300; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(answered.load(), 1);
  server_->signal(SIGTERM);
  for (auto& t : clients) t.join();
  EXPECT_EQ(lost.load(), 0);
  EXPECT_EQ(server_->wait_exit(), 0) << server_->stderr_text();
}

TEST(ServerStopTest, ASlowClientCannotHoldUpTheStop) {
  // The idle timeout is a minute, but once stopping a half-sent request gets only a short
  // grace period (5 s), so the server exits well within the deadline.
  server_process server({{"KNIT_MODE", "inline"}, {"KNIT_IDLE_TIMEOUT_MS", "60000"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection slow(server.port(), std::chrono::seconds(30));
  ASSERT_TRUE(slow.send("POST /jwt HTTP/1.1\r\nContent-Le"));
  // A round trip on another connection gives the server time to read those bytes (if it
  // has not, the connection counts as idle and is closed at once: the test passes either way).
  ASSERT_TRUE(connection(server.port()).request("GET", "/ping"));
  server.signal(SIGTERM);
  std::string received;
  EXPECT_TRUE(slow.wait_closed(&received));
  EXPECT_EQ(received, "");
  EXPECT_EQ(server.wait_exit(std::chrono::seconds(20)), 0) << server.stderr_text();
}

// ---- Pooled mode only -------------------------------------------------------------------

TEST(ServerPooledTest, FullPoolAnswers503WithRetryAfter) {
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
      if (c.send(make_request("POST", "/ssr", kSsrBody))) outcomes[t] = c.read_response(responses[t]);
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

// ---- Configuration errors ---------------------------------------------------------------

struct bad_setting {
  const char* name;
  const char* value;
};

class BadEnvironmentTest : public ::testing::TestWithParam<bad_setting> {};

TEST_P(BadEnvironmentTest, ExitsWith2AndNamesTheVariable) {
  const bad_setting bad = GetParam();
  server_process server(env_map{{bad.name, bad.value}});
  EXPECT_EQ(server.wait_exit(), 2);
  const std::string err = server.stderr_text();
  EXPECT_NE(err.find(bad.name), std::string::npos) << err;
  EXPECT_NE(err.find(bad.value), std::string::npos) << err;
}

INSTANTIATE_TEST_SUITE_P(
    Settings, BadEnvironmentTest,
    ::testing::Values(bad_setting{"PORT", "abc"}, bad_setting{"PORT", "70000"},
                      bad_setting{"PORT", "-1"}, bad_setting{"HOST", "not-an-address"},
                      bad_setting{"KNIT_MODE", "turbo"}, bad_setting{"KNIT_COST_PROFILE", "deno"},
                      bad_setting{"KNIT_SSR_COST_US", "-5"}, bad_setting{"KNIT_JWT_COST_US", "1e3"},
                      bad_setting{"KNIT_MAX_CONNECTIONS", "0"},
                      bad_setting{"KNIT_IDLE_TIMEOUT_MS", "soon"},
                      bad_setting{"KNIT_MAX_QUEUE_MS", "250ms"},
                      bad_setting{"KNIT_MAX_QUEUED", "-1"},
                      bad_setting{"KNIT_THREADS", "many"}),
    [](const auto& info) {
      std::string name = std::string(info.param.name) + "_" + std::to_string(info.index);
      std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
      return name;
    });

}  // namespace
}  // namespace knit_test

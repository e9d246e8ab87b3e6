// End-to-end tests of stuck calls (KNIT_STUCK_MS) and the bounded stop (KNIT_STOP_TIMEOUT_MS),
// over real sockets against the real binary, pooled mode (inline mode has no pool to retire
// a worker from).
//
// A task that "never returns" is an /ssr with KNIT_SSR_COST_US at its maximum, 10 s of CPU:
// far longer than any test here waits, and bounded, so nothing can burn forever. Every
// server exits through its stop deadline or a SIGKILL from server_process, which ends the
// burning thread with it. As elsewhere, no assertion is on speed: the exit-time bound is
// several times the promised stop_timeout + 1 s and only catches a stop that hangs.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "http_client.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"

namespace knit_test {
namespace {

namespace json = boost::json;
using steady = std::chrono::steady_clock;

constexpr const char* kSsrBody = R"({"name":"Ari","plan":"pro"})";
constexpr const char* kJwtBody = R"({"user":{"id":"u_42"}})";

// The most an /ssr may cost (server/config.cpp), in µs: 10 s of CPU, "forever" here.
constexpr const char* kForeverUs = "10000000";

// The promised bound is stop_timeout + 1 s; this only catches a stop that hangs.
constexpr auto kExitBound = std::chrono::seconds(5);

// One worker whose /ssr never returns in the test's lifetime.
env_map stuck_ssr_env(const char* stuck_ms, const char* stop_timeout_ms) {
  return {{"KNIT_MODE", "pooled"},
          {"KNIT_THREADS", "1"},
          {"KNIT_SSR_COST_US", kForeverUs},
          {"KNIT_STUCK_MS", stuck_ms},
          {"KNIT_STOP_TIMEOUT_MS", stop_timeout_ms}};
}

std::int64_t total(const json::object& stats, const char* counter) {
  return stats.at("pool").at("totals").at(counter).as_int64();
}

std::int64_t ssr_requests(const json::object& stats) {
  return stats.at("requests").at("ssr").as_int64();
}

// SIGTERM, then waits for the exit; returns the exit code and prints how long it took.
int stop_and_time(server_process& server, std::chrono::milliseconds* took) {
  const auto t0 = steady::now();
  server.signal(SIGTERM);
  const int code = server.wait_exit(std::chrono::seconds(20));
  *took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0);
  std::printf("[ measured ] SIGTERM to exit: %lld ms (exit code %d)\n",
              static_cast<long long>(took->count()), code);
  return code;
}

TEST(StuckCallTest, StuckSsrGets504ThenJwtGets200OnTheReplacementWorker) {
  // 1 s: long enough that the /jwt after it is never taken for stuck on a loaded machine.
  server_process server(stuck_ssr_env("1000", "2000"));
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();

  connection c(server.port());
  auto ssr = c.request("POST", "/ssr", kSsrBody);
  ASSERT_TRUE(ssr) << server.stderr_text();
  EXPECT_EQ(ssr->status, 504);
  EXPECT_NE(ssr->body.find("stuck"), std::string::npos) << ssr->body;
  EXPECT_EQ(ssr->header("content-type"), "text/plain; charset=UTF-8");
  EXPECT_EQ(ssr->header("retry-after"), "");  // the same request would be stuck again
  EXPECT_NE(ssr->header("connection"), "close");  // not the client's fault: keep-alive holds

  // Same connection, right after: the only worker is still burning, so this 200 can only
  // come from the thread that took its seat.
  auto jwt = c.request("POST", "/jwt", kJwtBody);
  ASSERT_TRUE(jwt) << server.stderr_text();
  EXPECT_EQ(jwt->status, 200);
  EXPECT_NE(jwt->body.find("\"token\""), std::string::npos) << jwt->body;

  const json::object stats = stats_where(server, [](const json::object&) { return true; });
  EXPECT_EQ(total(stats, "calls_stuck"), 1);
  EXPECT_EQ(total(stats, "workers_replaced"), 1);
  EXPECT_LE(total(stats, "retired_running"), 1);  // 1 unless the 10 s burn has ended
  EXPECT_EQ(stats.at("pool").at("threads").as_int64(), 1);  // replaced, not added

  // Every client was answered: a clean stop, exit 0, though a thread is left burning.
  std::chrono::milliseconds took{};
  EXPECT_EQ(stop_and_time(server, &took), 0) << server.stderr_text();
  EXPECT_LT(took, kExitBound);
  EXPECT_EQ(server.stderr_text().find("stop timeout"), std::string::npos) << server.stderr_text();
}

TEST(StopDeadlineTest, SigtermWithAStuckTaskAnswers503AndExitsWithCode3) {
  // Stuck detection far away: only the stop deadline can end this call.
  server_process server(stuck_ssr_env("60000", "500"));
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();

  connection c(server.port());
  ASSERT_TRUE(c.send(make_request("POST", "/ssr", kSsrBody)));
  // The request has reached the pool (counted and submitted by the same handler).
  stats_where(server, [](const json::object& s) { return ssr_requests(s) >= 1; });

  const auto t0 = steady::now();
  server.signal(SIGTERM);
  http_response res;
  ASSERT_EQ(c.read_response(res), read_outcome::complete) << server.stderr_text();
  EXPECT_EQ(res.status, 503);
  EXPECT_EQ(res.header("retry-after"), "1");
  EXPECT_EQ(res.header("connection"), "close");
  EXPECT_NE(res.body.find("stopping"), std::string::npos) << res.body;
  EXPECT_TRUE(c.wait_closed());

  const int code = server.wait_exit(std::chrono::seconds(20));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0);
  std::printf("[ measured ] SIGTERM to exit with a stuck task: %lld ms (stop timeout 500 ms)\n",
              static_cast<long long>(took.count()));
  EXPECT_EQ(code, 3) << server.stderr_text();
  EXPECT_LT(took, kExitBound);

  // One line names what was given up: the call, running or (if the worker had not picked
  // it up yet) not started, and the thread left in it.
  const std::string err = server.stderr_text();
  EXPECT_NE(err.find("the stop timeout (500 ms, KNIT_STOP_TIMEOUT_MS) passed"), std::string::npos) << err;
  const bool named = err.find("abandoned 1 running calls") != std::string::npos ||
                     err.find("cancelled 1 calls not started") != std::string::npos;
  EXPECT_TRUE(named) << err;
  EXPECT_NE(err.find("exiting with code 3"), std::string::npos) << err;
}

TEST(StopDeadlineTest, CleanSigtermWithABoundExitsZero) {
  server_process server({{"KNIT_MODE", "pooled"}, {"KNIT_STOP_TIMEOUT_MS", "500"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  {
    connection c(server.port());
    auto ssr = c.request("POST", "/ssr", kSsrBody);
    ASSERT_TRUE(ssr);
    EXPECT_EQ(ssr->status, 200);
  }
  std::chrono::milliseconds took{};
  EXPECT_EQ(stop_and_time(server, &took), 0) << server.stderr_text();
  EXPECT_LT(took, kExitBound);
  const std::string err = server.stderr_text();
  EXPECT_NE(err.find("knit-server: stopped"), std::string::npos) << err;
  EXPECT_EQ(err.find("stop timeout"), std::string::npos) << err;
}

TEST(StopDeadlineTest, ASlowClientIsCutAtTheStopTimeoutNotAfterFiveSeconds) {
  // A minute of idle timeout, a half-sent request: the stop grace is min(5 s, 500 ms), and
  // the deadline cuts the client. Nothing of a request was answered or lost: exit 0.
  server_process server({{"KNIT_MODE", "pooled"},
                         {"KNIT_IDLE_TIMEOUT_MS", "60000"},
                         {"KNIT_STOP_TIMEOUT_MS", "500"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection slow(server.port(), std::chrono::seconds(30));
  ASSERT_TRUE(slow.send("POST /jwt HTTP/1.1\r\nContent-Le"));
  // A round trip on another connection gives the server time to read those bytes.
  ASSERT_TRUE(connection(server.port()).request("GET", "/ping"));

  const auto t0 = steady::now();
  server.signal(SIGTERM);
  std::string received;
  EXPECT_TRUE(slow.wait_closed(&received));
  EXPECT_EQ(received, "");
  const int code = server.wait_exit(std::chrono::seconds(20));
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t0);
  std::printf("[ measured ] SIGTERM to exit with a slow client: %lld ms (stop timeout 500 ms)\n",
              static_cast<long long>(took.count()));
  EXPECT_EQ(code, 0) << server.stderr_text();
  // Under the 5 s grace this test would take 5 s or more; the bound is still generous.
  EXPECT_LT(took, std::chrono::milliseconds(4500));
}

}  // namespace
}  // namespace knit_test

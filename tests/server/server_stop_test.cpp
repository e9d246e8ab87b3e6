// End-to-end tests of stopping knit-server: SIGTERM with a request in progress or under load
// (in inline, pooled and multi mode, and in inline and asio mode with 2 and 4 event loops),
// with requests pipelined behind the one in progress, a slow client against the stop, stuck calls
// (KNIT_STUCK_MS) and the bounded stop (KNIT_STOP_TIMEOUT_MS), over real sockets against the real
// binary. Stuck calls are pooled mode only: inline mode has no pool to retire a worker from.
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
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "http_client.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"

namespace knit_test {
namespace {

namespace json = boost::json;
using steady = std::chrono::steady_clock;

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

// The SIGTERM tests run once per KNIT_MODE.
using server_stop = server_mode_test;

INSTANTIATE_TEST_SUITE_P(modes, server_stop,
                         ::testing::Values("inline", "pooled", "multi", "inline_h2", "inline_h4",
                                           "asio_h2", "asio_h4", "pooled_h2"),
                         [](const auto& info) { return info.param; });

TEST_P(server_stop, SigtermFinishesTheRequestInProgress) {
  ASSERT_NO_FATAL_FAILURE(start({{"KNIT_SSR_COST_US", "300000"}}));
  // An idle keep-alive connection: the stop must close it rather than wait for it.
  auto idle = std::make_unique<connection>(port());
  ASSERT_TRUE(idle->request("GET", "/ping"));

  // A slow /ssr, in progress when SIGTERM arrives. The stats line proves the server has the
  // request. (Inline mode can print it only after the route ran, since the route holds the
  // host thread; the response may then already be on its way, which must work too.) Short
  // rounds: a round that reads a line still saying 0 waits out its whole `wait` for another,
  // and a long wait would outlast the /ssr, which must still be running at the SIGTERM.
  auto busy = std::make_unique<connection>(port());
  ASSERT_TRUE(busy->send(make_request("POST", "/ssr", kSsrBody)));
  wait_until_counted(*server_, "ssr", 400, std::chrono::milliseconds(10));
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

TEST_P(server_stop, SigtermUnderLoadLosesNoStartedResponse) {
  // Admission's wait bound off: it sheds by the measured call time, which a loaded machine
  // under a sanitizer can stretch past 250 ms (a 503 here once); this test is about the stop.
  ASSERT_NO_FATAL_FAILURE(
      start({{"KNIT_SSR_COST_US", "2000"}, {"KNIT_THREADS", "2"}, {"KNIT_MAX_QUEUE_MS", "0"}}));
  interrupted_load load;
  const auto route = [](int t, int i) {
    return (t + i) % 2 == 0 ? tagged_route::ssr : tagged_route::ping;
  };
  load.request = [route](int t, int i) { return tagged_request(route(t, i), t, i); };
  // The route's page for that very request, or, for a request that arrived whole only after
  // the stop began (not started), 503 + Retry-After + close (server.hpp). Admission is off,
  // so no other 503.
  load.answers = [route](const http_response& res, int t, int i) {
    return answers_tagged(res, route(t, i), t, i) || is_not_started_answer(res);
  };
  EXPECT_EQ(lost_under_sigterm(*server_, load), 0);
  EXPECT_EQ(server_->wait_exit(), 0) << server_->stderr_text();
}

// Pipelining at the stop, in the modes where the /ssr runs off the thread that closes its
// connection's listener (on a worker, or on one of multi mode's threads), so the stop is seen
// to begin while it runs. Inline, the route holds its loop's thread, which closes that
// listener only after it.
using server_stop_pipelined = server_mode_test;

INSTANTIATE_TEST_SUITE_P(modes, server_stop_pipelined,
                         ::testing::Values("pooled", "asio", "multi", "pooled_h2"),
                         [](const auto& info) { return info.param; });

TEST_P(server_stop_pipelined, RequestsReceivedBehindTheOneInProgressGet503InOrder) {
  // A 1 s /ssr: time enough for the stop to begin, and be seen to, while it runs.
  ASSERT_NO_FATAL_FAILURE(start({{"KNIT_SSR_COST_US", "1000000"}, {"KNIT_THREADS", "2"}}));
  auto c = std::make_unique<connection>(port());
  // One write: the /ssr and two /ping pipelined behind it, all received before the stop.
  ASSERT_TRUE(c->send(make_request("POST", "/ssr", kSsrBody) + make_request("GET", "/ping") +
                      make_request("GET", "/ping")));
  const auto sent_at = std::chrono::steady_clock::now();
  wait_until_counted(*server_, "ssr", 400, std::chrono::milliseconds(10));
  const auto counted_at = std::chrono::steady_clock::now();
  server_->signal(SIGTERM);
  // The stop has begun (the listeners are closed) and no byte of the /ssr's response has come:
  // the /ssr is still in progress, so it is answered with the stop under way.
  ASSERT_TRUE(wait_not_listening(port()));
  const auto ms_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 t)
        .count();
  };
  // Once in ~1,300 runs (a clean clone's ./knit test, asio mode) the /ssr had ended first: the
  // times say whether the counting or the stop took the second.
  ASSERT_FALSE(c->readable_now()) << "the /ssr ended before the stop began: nothing to test (sent "
                                  << ms_since(sent_at) << " ms ago, counted "
                                  << ms_since(counted_at) << " ms ago)\n"
                                  << server_->stderr_text();

  // The /ssr's page; then the stop's 503 for each /ping, in order. Only the last response
  // announces the close: after a response with Connection: close no request may be answered
  // (RFC 9112 9.6), so the /ssr's and the first /ping's keep the connection for the next.
  http_response ssr;
  ASSERT_EQ(c->read_response(ssr), read_outcome::complete);
  EXPECT_EQ(ssr.status, 200);
  EXPECT_NE(ssr.body.find("&lt;Ari &amp; Co&gt;"), std::string::npos);
  EXPECT_EQ(ssr.header("connection"), "");
  for (int i = 0; i < 2; ++i) {
    http_response ping;
    ASSERT_EQ(c->read_response(ping), read_outcome::complete) << "/ping " << i;
    EXPECT_EQ(ping.status, 503) << "/ping " << i;
    EXPECT_EQ(ping.header("retry-after"), "1") << "/ping " << i;
    EXPECT_EQ(ping.body, "Service Unavailable") << "/ping " << i;
    EXPECT_EQ(ping.header("connection"), i == 1 ? "close" : "") << "/ping " << i;
  }
  // Then the end of the stream, with no byte more.
  std::string after;
  EXPECT_TRUE(c->wait_closed(&after));
  EXPECT_EQ(after, "");
  c.reset();  // our end too: the server waits for it before it lets the connection go
  EXPECT_EQ(server_->wait_exit(), 0) << server_->stderr_text();
}

TEST(inline_stop, ASlowClientCannotHoldUpTheStop) {
  // The idle timeout is a minute, but once stopping a half-sent request gets only a short
  // grace period (5 s), so the server exits well within the deadline.
  server_process server({{"KNIT_MODE", "inline"}, {"KNIT_IDLE_TIMEOUT_MS", "60000"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection slow(server.port(), std::chrono::seconds(30));
  ASSERT_NO_FATAL_FAILURE(send_half_a_request(slow, server.port()));
  server.signal(SIGTERM);
  expect_closed_silently(slow);
  EXPECT_EQ(server.wait_exit(std::chrono::seconds(20)), 0) << server.stderr_text();
}

TEST(stuck_call, StuckSsrGets504ThenJwtGets200OnTheReplacementWorker) {
  // 1 s: long enough that the /jwt after it is never taken for stuck on a loaded machine.
  server_process server(stuck_ssr_env("1000", "2000"));
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();

  connection c(server.port());
  auto ssr = c.request("POST", "/ssr", kSsrBody);
  ASSERT_NO_FATAL_FAILURE(expect_status(ssr, 504, server.stderr_text()));
  EXPECT_NE(ssr->body.find("stuck"), std::string::npos) << ssr->body;
  EXPECT_EQ(ssr->header("content-type"), "text/plain; charset=UTF-8");
  EXPECT_EQ(ssr->header("retry-after"), "");      // the same request would be stuck again
  EXPECT_NE(ssr->header("connection"), "close");  // not the client's fault: keep-alive holds

  // Same connection, right after: the only worker is still burning, so this 200 can only
  // come from the thread that took its seat.
  auto jwt = c.request("POST", "/jwt", kJwtBody);
  ASSERT_NO_FATAL_FAILURE(expect_status(jwt, 200, server.stderr_text()));
  EXPECT_NE(jwt->body.find("\"token\""), std::string::npos) << jwt->body;

  const json::object stats = read_stats(server);
  EXPECT_EQ(pool_total(stats, "calls_stuck"), 1);
  EXPECT_EQ(pool_total(stats, "workers_replaced"), 1);
  EXPECT_LE(pool_total(stats, "retired_running"), 1);       // 1 unless the 10 s burn has ended
  EXPECT_EQ(stats.at("pool").at("threads").as_int64(), 1);  // replaced, not added

  // Every client was answered: a clean stop, exit 0, though a thread is left burning.
  std::chrono::milliseconds took{};
  EXPECT_EQ(stop_and_time(server, &took), 0) << server.stderr_text();
  EXPECT_LT(took, kExitBound);
  EXPECT_EQ(server.stderr_text().find("stop timeout"), std::string::npos) << server.stderr_text();
}

TEST(stop_deadline, SigtermWithAStuckTaskAnswers503AndExitsWithCode3) {
  // Stuck detection far away: only the stop deadline can end this call.
  server_process server(stuck_ssr_env("60000", "500"));
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();

  connection c(server.port());
  ASSERT_TRUE(c.send(make_request("POST", "/ssr", kSsrBody)));
  // The request has reached the pool (counted and submitted by the same handler).
  wait_until_counted(server, "ssr");

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
  EXPECT_NE(err.find("the stop timeout (500 ms, KNIT_STOP_TIMEOUT_MS) passed"), std::string::npos)
      << err;
  const bool named = err.find("abandoned 1 running calls") != std::string::npos ||
                     err.find("cancelled 1 calls not started") != std::string::npos;
  EXPECT_TRUE(named) << err;
  EXPECT_NE(err.find("exiting with code 3"), std::string::npos) << err;
}

TEST(stop_deadline, CleanSigtermWithABoundExitsZero) {
  server_process server({{"KNIT_MODE", "pooled"}, {"KNIT_STOP_TIMEOUT_MS", "500"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  {
    connection c(server.port());
    ASSERT_NO_FATAL_FAILURE(expect_status(c.request("POST", "/ssr", kSsrBody), 200));
  }
  std::chrono::milliseconds took{};
  EXPECT_EQ(stop_and_time(server, &took), 0) << server.stderr_text();
  EXPECT_LT(took, kExitBound);
  const std::string err = server.stderr_text();
  EXPECT_NE(err.find("knit-server: stopped"), std::string::npos) << err;
  EXPECT_EQ(err.find("stop timeout"), std::string::npos) << err;
}

TEST(stop_deadline, ASlowClientIsCutAtTheStopTimeoutNotAfterFiveSeconds) {
  // A minute of idle timeout, a half-sent request: the stop grace is min(5 s, 500 ms), and
  // the deadline cuts the client. Nothing of a request was answered or lost: exit 0.
  server_process server({{"KNIT_MODE", "pooled"},
                         {"KNIT_IDLE_TIMEOUT_MS", "60000"},
                         {"KNIT_STOP_TIMEOUT_MS", "500"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection slow(server.port(), std::chrono::seconds(30));
  ASSERT_NO_FATAL_FAILURE(send_half_a_request(slow, server.port()));

  const auto t0 = steady::now();
  server.signal(SIGTERM);
  expect_closed_silently(slow);
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

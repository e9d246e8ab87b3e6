// End-to-end tests of the operations endpoints (GET /livez, /readyz, /metrics) and of the drain
// on SIGTERM (KNIT_DRAIN_DELAY_MS): the real knit-server binary over real sockets, in every
// KNIT_MODE and with 2 event loops.
//
// As elsewhere no assertion is on speed: a deadline only stops a broken server from hanging
// the suite. Where a test waits for the server's state to change (a degraded /readyz
// clearing), it polls the state itself, bounded, rather than sleeping a guessed time.
#include <signal.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "http_client.hpp"
#include "prometheus_text.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"

namespace knit_test {
namespace {

namespace json = boost::json;
using steady = std::chrono::steady_clock;

// Expects a short text/plain answer.
void expect_text(const std::optional<http_response>& res, int status, const std::string& body,
                 const std::string& context = {}) {
  ASSERT_NO_FATAL_FAILURE(expect_status(res, status, context));
  EXPECT_EQ(res->header("content-type"), "text/plain; charset=UTF-8") << context;
  EXPECT_EQ(res->body, body) << context;
}

// Asks /readyz on a fresh connection until it answers `status` (bounded: 10 s); returns the
// last answer.
std::optional<http_response> readyz_until(std::uint16_t port, int status) {
  std::optional<http_response> res;
  const auto give_up = steady::now() + std::chrono::seconds(10);
  do {
    res = connection(port).request("GET", "/readyz");
    if (res && res->status == status) return res;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (steady::now() < give_up);
  return res;
}

// Long enough for a test's requests to be made inside it on a loaded machine.
constexpr std::chrono::milliseconds kDrainDelay{2000};

using server_ops = server_mode_test;

INSTANTIATE_TEST_SUITE_P(modes, server_ops,
                         ::testing::Values("inline", "pooled", "multi", "asio", "auto", "inline_h2",
                                           "asio_h2"),
                         [](const auto& info) { return info.param; });

TEST_P(server_ops, LivezAndReadyzAnswerOk) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  ASSERT_NO_FATAL_FAILURE(expect_text(c.request("GET", "/livez"), 200, "ok\n"));
  ASSERT_NO_FATAL_FAILURE(expect_text(c.request("GET", "/readyz"), 200, "ok\n"));
  // HEAD as for /ping: the same head, Content-Length included, no body.
  auto head = c.exchange(make_request("HEAD", "/readyz"), true);
  ASSERT_NO_FATAL_FAILURE(expect_status(head, 200));
  EXPECT_EQ(head->header("content-length"), "3");
  EXPECT_EQ(head->body, "");
  // The same connection still works after it (keep-alive holds).
  ASSERT_NO_FATAL_FAILURE(expect_text(c.request("GET", "/livez?probe=1"), 200, "ok\n"));
}

TEST_P(server_ops, OtherUnknownPathsStay404) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  for (const char* path : {"/healthz", "/livez/", "/ready", "/metrics/x", "/READYZ"}) {
    ASSERT_NO_FATAL_FAILURE(expect_text(c.request("GET", path), 404, "404 Not Found", path));
  }
  ASSERT_NO_FATAL_FAILURE(expect_text(c.request("POST", "/readyz", "{}"), 404, "404 Not Found"));
}

TEST_P(server_ops, DuringTheDrainDelayEverythingButReadyzIsServedThenTheStopRuns) {
  ASSERT_NO_FATAL_FAILURE(start({{"KNIT_DRAIN_DELAY_MS", std::to_string(kDrainDelay.count())}}));
  EXPECT_NE(server_->stdout_seen().find("drain: on SIGTERM /readyz answers 503 for 2000 ms"),
            std::string::npos)
      << server_->stdout_seen();
  connection kept(port());
  ASSERT_NO_FATAL_FAILURE(expect_status(kept.request("GET", "/ping"), 200));

  const auto signalled = steady::now();
  server_->signal(SIGTERM);
  ASSERT_NO_FATAL_FAILURE(expect_text(readyz_until(port(), 503), 503, "draining\n"));
  // Still inside the delay (it began after `signalled`): served as before, keep-alive kept,
  // on the kept connection and on new ones.
  auto ping = kept.request("GET", "/ping");
  auto ssr = kept.request("POST", "/ssr", kSsrBody);
  auto fresh = connection(port()).request("GET", "/ping");
  auto livez = connection(port()).request("GET", "/livez");
  ASSERT_LT(steady::now() - signalled, kDrainDelay) << "too slow to test inside the delay";
  ASSERT_NO_FATAL_FAILURE(expect_status(ping, 200, "/ping during the delay"));
  EXPECT_EQ(ping->header("connection"), "");
  ASSERT_NO_FATAL_FAILURE(expect_status(ssr, 200, "/ssr during the delay"));
  EXPECT_EQ(ssr->header("connection"), "");
  ASSERT_NO_FATAL_FAILURE(expect_status(fresh, 200, "/ping on a new connection"));
  ASSERT_NO_FATAL_FAILURE(expect_text(livez, 200, "ok\n"));

  // After it, the stop: the idle kept-alive connection is closed, new ones are refused.
  EXPECT_TRUE(kept.wait_closed());
  EXPECT_GE(steady::now() - signalled, kDrainDelay);
  EXPECT_TRUE(wait_not_listening(port()));
  EXPECT_EQ(server_->wait_exit(), 0) << server_->stderr_text();
}

TEST_P(server_ops, ARequestThatArrivesAfterTheStopBeganGets503AndClose) {
  // Drain delay 0: the stop begins at the signal.
  ASSERT_NO_FATAL_FAILURE(start());
  // A request half sent before the stop (the connection is not idle, so the stop keeps it):
  // the 100 Continue shows that the server has read its header, on whichever host.
  auto late_connection = std::make_unique<connection>(port());
  connection& late = *late_connection;
  ASSERT_TRUE(late.send(
      "POST /ssr HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n"));
  ASSERT_EQ(late.read_until("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  server_->signal(SIGTERM);
  ASSERT_TRUE(wait_not_listening(port()));
  // ...and completed after it: not started, refused, closed.
  ASSERT_TRUE(late.send("{}"));
  http_response res;
  ASSERT_EQ(late.read_response(res), read_outcome::complete);
  EXPECT_TRUE(is_not_started_answer(res)) << res.status << ' ' << res.body;
  EXPECT_EQ(res.body, "Service Unavailable");
  if (pooled()) {
    // Counted under its route, never submitted to the pool. (The server still runs: our end
    // of the connection is open, so it answers SIGUSR1.)
    const json::object stats = wait_until_counted(*server_, "ssr");
    EXPECT_EQ(pool_total(stats, "calls_submitted"), 0);
  }
  EXPECT_TRUE(late.wait_closed());
  late_connection.reset();  // our end too: the server waits for it before it lets go
  EXPECT_EQ(server_->wait_exit(), 0) << server_->stderr_text();
}

TEST(ops_drain, ARequestInProgressWhenTheDelayEndsIsAnsweredWithConnectionClose) {
  // The /ssr takes 1.5 s of CPU on the worker; the delay ends 300 ms after the signal. The
  // stop timeout is out of the way (60 s, not the default 10 s): on a starved CPU (a cgroup
  // held to half a CPU, three tests at once) the 1.5 s of CPU took over 10 s of wall time
  // and the stop timeout cut the call, which is the stop timeout's test, not this one.
  server_process server({{"KNIT_MODE", "pooled"},
                         {"KNIT_THREADS", "1"},
                         {"KNIT_SSR_COST_US", "1500000"},
                         {"KNIT_DRAIN_DELAY_MS", "300"},
                         {"KNIT_STOP_TIMEOUT_MS", "60000"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection busy(server.port(), std::chrono::seconds(30));
  ASSERT_TRUE(busy.send(make_request("POST", "/ssr", kSsrBody)));
  wait_until_pool_busy(server);
  server.signal(SIGTERM);
  http_response res;
  ASSERT_EQ(busy.read_response(res), read_outcome::complete);
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.header("connection"), "close");
  EXPECT_TRUE(busy.wait_closed());
  EXPECT_EQ(server.wait_exit(), 0) << server.stderr_text();
}

TEST(ops_drain, ASecondSigtermDuringTheDelayExitsAtOnce) {
  server_process server({{"KNIT_MODE", "pooled"}, {"KNIT_DRAIN_DELAY_MS", "60000"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  server.signal(SIGTERM);
  ASSERT_NO_FATAL_FAILURE(expect_text(readyz_until(server.port(), 503), 503, "draining\n"));
  server.signal(SIGTERM);
  // Exit code 1: the second signal's, long before the minute of delay.
  EXPECT_EQ(server.wait_exit(std::chrono::seconds(10)), 1) << server.stderr_text();
  EXPECT_NE(server.stderr_text().find("second stop signal"), std::string::npos)
      << server.stderr_text();
}

TEST_P(server_ops, MetricsParseAndCountTheRequestsMade) {
  ASSERT_NO_FATAL_FAILURE(start());
  constexpr int kPings = 7;
  for (int i = 0; i < kPings; ++i) {
    ASSERT_NO_FATAL_FAILURE(expect_status(connection(port()).request("GET", "/ping"), 200));
  }
  connection c(port());
  ASSERT_NO_FATAL_FAILURE(expect_status(c.request("POST", "/ssr", kSsrBody), 200));
  ASSERT_NO_FATAL_FAILURE(expect_status(c.request("POST", "/ssr", kSsrBody), 200));
  ASSERT_NO_FATAL_FAILURE(expect_status(c.request("GET", "/nope"), 404));
  ASSERT_NO_FATAL_FAILURE(expect_status(c.request("GET", "/metrics"), 200));  // counted below

  // A response is counted once its write has completed, which is after the client has it: a
  // /ping answered on another event loop may not be counted yet when this connection's
  // /metrics is answered. So read /metrics again until every ping is in (bounded); the
  // requests on this connection are in order (the next is read after the last is written).
  int metrics_requests = 1;
  std::optional<http_response> res;
  prom_page page;
  const auto give_up = steady::now() + std::chrono::seconds(10);
  do {
    res = c.request("GET", "/metrics");
    ++metrics_requests;
    ASSERT_NO_FATAL_FAILURE(expect_status(res, 200));
    page = parse_prometheus_text(res->body);
  } while (page.sum("knit_http_requests_total", {{"route", "ping"}}) < kPings &&
           steady::now() < give_up);
  EXPECT_EQ(res->header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  std::string errors;
  for (const std::string& e : page.errors) errors += e + '\n';
  for (const std::string& e : histogram_errors(page)) errors += e + '\n';
  ASSERT_EQ(errors, "") << res->body;
  for (const auto& [family, type] : page.types) EXPECT_TRUE(page.helped.count(family)) << family;

  // Every host's counts together are the requests made (each was answered before the next).
  EXPECT_EQ(page.sum("knit_http_requests_total", {{"route", "ping"}, {"code", "200"}}), kPings);
  EXPECT_EQ(page.sum("knit_http_requests_total", {{"route", "ssr"}, {"code", "200"}}), 2);
  EXPECT_EQ(page.sum("knit_http_requests_total", {{"route", "other"}, {"code", "404"}}), 1);
  // Every /metrics but this one (whose write has not completed).
  EXPECT_EQ(page.sum("knit_http_requests_total", {{"route", "metrics"}}), metrics_requests - 1);
  EXPECT_EQ(page.sum("knit_http_requests_total"), kPings + 2 + 1 + metrics_requests - 1);
  EXPECT_EQ(page.sum("knit_http_request_duration_seconds_count", {{"route", "ping"}}), kPings);
  EXPECT_EQ(page.sum("knit_http_request_duration_seconds_count", {{"route", "ssr"}}), 2);
  EXPECT_GT(page.sum("knit_http_request_duration_seconds_sum", {{"route", "ssr"}}), 0);
  EXPECT_GE(page.sum("knit_open_connections"), 1);  // this one
  EXPECT_GT(page.sum("knit_buffered_bytes"), 0);
  EXPECT_GT(page.sum("knit_memory_budget_bytes"), 0);  // the default budget
  EXPECT_TRUE(page.has("knit_parked_bytes"));
  EXPECT_EQ(page.sum("knit_ready"), 1);
  EXPECT_EQ(page.sum("knit_draining"), 0);
  EXPECT_EQ(page.sum("knit_admission_refusals_total"), 0);
  EXPECT_TRUE(page.has("knit_stuck_calls_total"));
  // A host label exactly when there are several event loops.
  EXPECT_EQ(res->body.find("host=\"") != std::string::npos, hosts() > 1);
  if (pooled()) {
    EXPECT_EQ(page.sum("knit_pool_calls_submitted_total"), 2);
    EXPECT_EQ(page.sum("knit_pool_worker_calls_run_total"), 2);
  } else if (mode() == "auto") {  // a pool, which the cheap /ssr may not have used
    EXPECT_TRUE(page.has("knit_pool_calls_submitted_total"));
  } else {
    EXPECT_FALSE(page.has("knit_pool_calls_submitted_total"));
  }
}

TEST(ops_readiness, ReadyzIsAnsweredWhileTheOnlyWorkerIsBusyAndDegradesOnRefusals) {
  server_process server({{"KNIT_MODE", "pooled"},
                         {"KNIT_THREADS", "1"},
                         {"KNIT_SSR_COST_US", "1500000"},
                         {"KNIT_MAX_QUEUED", "1"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection slow(server.port(), std::chrono::seconds(30));
  ASSERT_TRUE(slow.send(make_request("POST", "/ssr", "{}")));
  wait_until_pool_busy(server);

  // The worker is busy for a second and a half; the health checks do not wait for it.
  connection probe(server.port());
  ASSERT_NO_FATAL_FAILURE(expect_text(probe.request("GET", "/readyz"), 200, "ok\n"));

  // Admission refuses the next call (one is already ahead): the server is degraded.
  ASSERT_NO_FATAL_FAILURE(expect_status(connection(server.port()).request("POST", "/ssr", "{}"),
                                        503, "the refused call"));
  ASSERT_NO_FATAL_FAILURE(
      expect_text(probe.request("GET", "/readyz"), 503, "degraded: refusing work\n"));
  ASSERT_NO_FATAL_FAILURE(expect_text(probe.request("GET", "/livez"), 200, "ok\n"));

  http_response slow_res;
  ASSERT_EQ(slow.read_response(slow_res), read_outcome::complete);
  EXPECT_EQ(slow_res.status, 200);
  // Without new refusals the window passes and the server wants traffic again.
  ASSERT_NO_FATAL_FAILURE(expect_text(readyz_until(server.port(), 200), 200, "ok\n"));
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

TEST(ops_readiness, ThreeStuckCallsMakeReadyzSayWorkersStuck) {
  // Three workers, each given a call that runs past KNIT_STUCK_MS: three 504s, three workers
  // replaced. (1.5 s each: the burning threads end soon after the test.)
  server_process server({{"KNIT_MODE", "pooled"},
                         {"KNIT_THREADS", "3"},
                         {"KNIT_SSR_COST_US", "1500000"},
                         {"KNIT_STUCK_MS", "200"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection a(server.port(), std::chrono::seconds(30));
  connection b(server.port(), std::chrono::seconds(30));
  connection c(server.port(), std::chrono::seconds(30));
  for (connection* x : {&a, &b, &c}) ASSERT_TRUE(x->send(make_request("POST", "/ssr", "{}")));
  for (connection* x : {&a, &b, &c}) {
    http_response res;
    ASSERT_EQ(x->read_response(res), read_outcome::complete);
    EXPECT_EQ(res.status, 504);
  }
  ASSERT_NO_FATAL_FAILURE(expect_text(connection(server.port()).request("GET", "/readyz"), 503,
                                      "degraded: workers stuck\n"));
  ASSERT_NO_FATAL_FAILURE(
      expect_text(connection(server.port()).request("GET", "/livez"), 200, "ok\n"));
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

}  // namespace
}  // namespace knit_test

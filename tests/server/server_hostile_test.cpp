// End-to-end tests against hostile or careless clients: bounded buffering, released buffers,
// a dead or full stdout, the Host rule, and admission control, over real sockets.
//
// Like the other end-to-end tests, every test runs its own knit-server, and no test asserts on
// timing: deadlines only stop a broken server from hanging the suite.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "http_client.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"

namespace knit_test {
namespace {

namespace json = boost::json;

// The server's read-buffer limit (server_config::kReadBufferLimit) and the bound this file
// holds it to: a request that needs more buffered is refused once the client has sent
// this much, not later.
constexpr std::size_t kReadBufferLimit = 16 * 1024;
constexpr std::size_t kSlack = 4 * 1024;

// What an idle keep-alive connection may keep buffered after any response
// (session::release_large_buffers: the read buffer's 8 KiB chunk, which its next read takes
// anyway, and the response's body, head and batch at 4 KiB each; a GET's body is empty).
constexpr std::int64_t kIdleConnectionBytes = 20 * 1024;

// The head of a chunked /ssr request: the body follows in chunks.
const std::string kChunkedHead =
    "POST /ssr HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n";

// `n` header (or trailer) fields, each as short as a field can be: "a:" and no value.
std::string empty_fields(int n) {
  std::string fields;
  for (int i = 0; i < n; ++i) fields += "a:\r\n";
  return fields;
}

using hostile_clients = server_mode_test;

INSTANTIATE_TEST_SUITE_P(modes, hostile_clients, ::testing::Values("inline", "pooled", "multi"),
                         [](const auto& info) { return info.param; });

// ---- Bounded buffering ------------------------------------------------------------------

// A chunked body whose next line never ends. Only the beginning of each shape is sent:
// enough to pass the read-buffer limit by kSlack, which proves the bound without sending
// the megabytes an attacker would.
struct unending_shape {
  const char* name;
  std::string start;  // after the header
  char fill;          // repeated after `start`
};

void expect_refused_within_the_limit(std::uint16_t port, const unending_shape& shape) {
  std::string request = kChunkedHead + shape.start;
  request.append(kReadBufferLimit + kSlack - request.size(), shape.fill);

  connection c(port, std::chrono::seconds(20));
  // Nothing more is sent: the server must decide on these bytes alone, so it accepted at
  // most request.size() bytes (limit + 4 KiB) before refusing.
  auto res = c.exchange(request);
  ASSERT_TRUE(res) << shape.name;
  EXPECT_TRUE(res->status == 400 || res->status == 413 || res->status == 431)
      << shape.name << ": " << res->status;
  EXPECT_EQ(res->header("connection"), "close") << shape.name;
  EXPECT_TRUE(c.wait_closed()) << shape.name;
}

TEST_P(hostile_clients, UnendingChunkSizeLineIsRefusedWithinTheLimit) {
  ASSERT_NO_FATAL_FAILURE(start());
  expect_refused_within_the_limit(port(), {"chunk-size", "1", 'a'});
}

TEST_P(hostile_clients, UnendingChunkExtensionIsRefusedWithinTheLimit) {
  ASSERT_NO_FATAL_FAILURE(start());
  expect_refused_within_the_limit(port(), {"extension", "1;", 'a'});
}

TEST_P(hostile_clients, UnendingTrailerIsRefusedWithinTheLimit) {
  ASSERT_NO_FATAL_FAILURE(start());
  expect_refused_within_the_limit(port(), {"trailer", "0\r\nX: ", 'a'});
}

TEST_P(hostile_clients, EndlessZeroDigitsAreRefusedWithinTheLimit) {
  ASSERT_NO_FATAL_FAILURE(start());
  expect_refused_within_the_limit(port(), {"zeros", "", '0'});
}

TEST_P(hostile_clients, TooManyHeaderFieldsAre431ThenClose) {
  // 129 empty one-letter fields (128 and Host): 516 bytes, far under the 8 KiB header limit,
  // but each field costs Beast a node of about 80 bytes, so the count is capped at 128.
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  ASSERT_NO_FATAL_FAILURE(
      expect_answer_then_close(c, make_request("GET", "/ping", {}, empty_fields(128)), 431));
}

TEST_P(hostile_clients, FieldsUpToTheCapAreServed) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  auto res = c.exchange(make_request("GET", "/ping", {}, empty_fields(127)));  // + Host = 128
  ASSERT_NO_FATAL_FAILURE(expect_status(res, 200));
}

TEST_P(hostile_clients, TooManyTrailerFieldsAreRefused) {
  // Trailer fields are stored like header fields and count towards the same cap.
  ASSERT_NO_FATAL_FAILURE(start());
  const std::string request = kChunkedHead + "2\r\n{}\r\n0\r\n" + empty_fields(200) + "\r\n";
  connection c(port());
  auto res = c.exchange(request);
  ASSERT_TRUE(res);
  EXPECT_TRUE(res->status == 400 || res->status == 431) << res->status;
  EXPECT_TRUE(c.wait_closed());
}

TEST_P(hostile_clients, ChunkedBodyWithinTheLimitsIsStillServed) {
  // The bounded buffer must not refuse honest chunked bodies, even ones larger than the
  // buffer itself: body bytes pass through it.
  ASSERT_NO_FATAL_FAILURE(start());
  std::string body = R"({"name":")" + std::string(40 * 1024, 'x') + R"("})";
  std::string request = kChunkedHead;
  for (std::size_t at = 0; at < body.size(); at += 10000) {
    const std::string piece = body.substr(at, 10000);
    char size[16];
    std::snprintf(size, sizeof size, "%zx;ext=1\r\n", piece.size());
    request += size + piece + "\r\n";
  }
  request += "0\r\nX-Trailer: fine\r\n\r\n";
  connection c(port());
  auto res = c.exchange(request);
  ASSERT_NO_FATAL_FAILURE(expect_status(res, 200));
  EXPECT_NE(res->body.find(std::string(1000, 'x')), std::string::npos);
}

TEST_P(hostile_clients, BigResponseBuffersAreReleasedOnAnIdleConnection) {
  ASSERT_NO_FATAL_FAILURE(start());
  // A 64 KiB body whose name is all apostrophes: each one renders as an escape, several
  // times over, so the page is far larger than the request.
  const std::string body = R"({"name":")" + std::string(64 * 1024 - 12, '\'') + R"("})";
  connection c(port());
  auto big = c.request("POST", "/ssr", body);
  ASSERT_TRUE(big);
  ASSERT_EQ(big->status, 200);
  ASSERT_GT(big->body.size(), 500'000u);
  // The /ping after it is answered only once the big response's write has completed (one
  // request at a time per connection), so its buffers have been released by now.
  auto ping = c.request("GET", "/ping");
  ASSERT_TRUE(ping);
  ASSERT_EQ(ping->status, 200);

  const json::object stats = read_stats(*server_);
  EXPECT_EQ(stats.at("connections").as_int64(), 1);  // ours, idle and kept alive
  EXPECT_LE(stats.at("buffered_bytes").as_int64(), kIdleConnectionBytes) << json::serialize(stats);
}

TEST_P(hostile_clients, AHalfSentHeadIsCountedInTheBufferedBytes) {
  // A slow client's unfinished head is what it makes the server hold: the stats must show
  // it while the client dawdles, not only once a response is sent (which never happens).
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  ASSERT_TRUE(c.send("GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + std::string(6000, 'a')));
  const json::object stats = stats_where(*server_, [](const json::object& s) {
    return s.at("connections").as_int64() == 1 && s.at("buffered_bytes").as_int64() >= 6000;
  });
  EXPECT_FALSE(stats.empty());
}

// ---- stdout: a reader that has gone, a reader that never reads --------------------------

TEST_P(hostile_clients, StatsToAClosedStdoutDoNotKillTheServer) {
  ASSERT_NO_FATAL_FAILURE(start());
  server_->close_stdout();
  for (int i = 0; i < 3; ++i) server_->signal(SIGUSR1);
  connection c(port());
  ASSERT_NO_FATAL_FAILURE(expect_status(c.request("GET", "/ping"), 200));
  // SIGUSR1 (10) is delivered and handled before SIGTERM (15): had a stats write raised
  // SIGPIPE, the server would be dead by then and stop() would not see exit code 0.
  EXPECT_EQ(server_->stop(), 0) << server_->stderr_text();
}

TEST_P(hostile_clients, AFullStdoutNeitherBlocksNorKills) {
  ASSERT_NO_FATAL_FAILURE(start());
  // Nobody reads stdout from here on. Each knit-stats line is a few hundred bytes; 1000 of
  // them overflow a 64 KiB pipe several times over. A blocking write would stop the event
  // loop, and the /ping after each signal would time out.
  connection c(port());
  for (int i = 0; i < 1000; ++i) {
    server_->signal(SIGUSR1);
    auto res = c.request("GET", "/ping");
    ASSERT_TRUE(res) << "round " << i;
    ASSERT_EQ(res->status, 200);
  }
  // Now read again: a later line reports the lines that could not be written.
  const json::object stats = stats_where(
      *server_, [](const json::object& s) { return s.at("log_dropped").as_int64() > 0; });
  EXPECT_GT(stats.at("log_dropped").as_int64(), 0);
}

// ---- Protocol ------------------------------------------------------------------------------

TEST_P(hostile_clients, Http11WithoutHostIs400ThenClose) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  ASSERT_NO_FATAL_FAILURE(expect_answer_then_close(c, "GET /ping HTTP/1.1\r\n\r\n", 400));
}

TEST_P(hostile_clients, TwoHostFieldsAre400) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  ASSERT_NO_FATAL_FAILURE(
      expect_status(c.exchange("GET /ping HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400));
}

TEST_P(hostile_clients, Http10WithoutHostIsServed) {
  ASSERT_NO_FATAL_FAILURE(start());
  connection c(port());
  ASSERT_NO_FATAL_FAILURE(expect_status(c.exchange("GET /ping HTTP/1.0\r\n\r\n"), 200));
}

// ---- Admission control (pooled mode) ------------------------------------------------------

TEST(admission_control, ALongQueueIsRefusedWith503AndRetryAfter) {
  // One worker. /jwt costs 50 ms, /ssr 3 s; a call may wait at most 1 ms.
  server_process server({{"KNIT_MODE", "pooled"},
                         {"KNIT_THREADS", "1"},
                         {"KNIT_JWT_COST_US", "50000"},
                         {"KNIT_SSR_COST_US", "3000000"},
                         {"KNIT_MAX_QUEUE_MS", "1"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  constexpr const char* kJwt = R"({"user":{"id":"u_42"}})";

  // 1. One call comes back: the pool now estimates a call at about 50 ms.
  connection warm(server.port());
  auto first = warm.request("POST", "/jwt", kJwt);
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200);

  // 2. A slow /ssr is accepted (nothing ahead of it) and occupies the worker. Wait until the
  //    pool has it (submitted, not completed) before going on.
  connection slow(server.port(), std::chrono::seconds(30));
  ASSERT_TRUE(slow.send(make_request("POST", "/ssr", "{}")));
  wait_until_pool_busy(server);

  // 3. Now a call has one call ahead: expected wait 1 x ~50 ms > 1 ms. Refused at once.
  connection refused(server.port());
  auto busy = refused.request("POST", "/jwt", kJwt);
  ASSERT_NO_FATAL_FAILURE(expect_status(busy, 503));
  EXPECT_EQ(busy->header("retry-after"), "1");

  // /ping never queues behind the pool.
  ASSERT_NO_FATAL_FAILURE(expect_status(refused.request("GET", "/ping"), 200));

  // 4. Once the slow call is done, calls are accepted again.
  http_response slow_res;
  ASSERT_EQ(slow.read_response(slow_res), read_outcome::complete);
  EXPECT_EQ(slow_res.status, 200);
  ASSERT_NO_FATAL_FAILURE(expect_status(refused.request("POST", "/jwt", kJwt), 200));

  // (Waits for a line that counts it: a line answering an earlier SIGUSR1 may come first.)
  const json::object stats = stats_where(server, [](const json::object& s) {
    return s.at("rejected").at("queue_delay").as_int64() >= 1;
  });
  EXPECT_GE(stats.at("rejected").at("queue_delay").as_int64(), 1);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

TEST(admission_control, TheCountCapRefusesBeforeAnyEstimateExists) {
  // No call has come back yet (estimate 0), so only KNIT_MAX_QUEUED=1 can refuse.
  server_process server({{"KNIT_MODE", "pooled"},
                         {"KNIT_THREADS", "1"},
                         {"KNIT_SSR_COST_US", "3000000"},
                         {"KNIT_MAX_QUEUED", "1"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection slow(server.port(), std::chrono::seconds(30));
  ASSERT_TRUE(slow.send(make_request("POST", "/ssr", "{}")));
  wait_until_pool_busy(server);
  connection second(server.port());
  auto busy = second.request("POST", "/ssr", "{}");
  ASSERT_NO_FATAL_FAILURE(expect_status(busy, 503));
  EXPECT_EQ(busy->header("retry-after"), "1");
  http_response slow_res;
  ASSERT_EQ(slow.read_response(slow_res), read_outcome::complete);
  EXPECT_EQ(slow_res.status, 200);
  const json::object stats = stats_where(server, [](const json::object& s) {
    return s.at("rejected").at("queue_count").as_int64() >= 1;
  });
  EXPECT_EQ(stats.at("rejected").at("queue_count").as_int64(), 1);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

TEST(admission_control, ACallNotStartedWithinTheQueueWaitDeadlineIsAnswered503) {
  // Cold (no call has come back: the estimate is 0), so admission accepts a second call behind
  // a 3 s one; it cannot start within KNIT_MAX_QUEUE_WAIT_MS and is answered 503 then, counted
  // as queue_wait, instead of waiting 3 s. No worker to lend (KNIT_LEND_WORKERS=0: the
  // lending limit is reached at once), as with every lent worker held too.
  server_process server({{"KNIT_MODE", "pooled"},
                         {"KNIT_THREADS", "1"},
                         {"KNIT_LEND_WORKERS", "0"},
                         {"KNIT_SSR_COST_US", "3000000"},
                         {"KNIT_MAX_QUEUE_WAIT_MS", "200"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection slow(server.port(), std::chrono::seconds(30));
  ASSERT_TRUE(slow.send(make_request("POST", "/ssr", "{}")));
  wait_until_pool_busy(server);
  connection second(server.port(), std::chrono::seconds(30));
  auto shed = second.request("POST", "/ssr", "{}");
  ASSERT_NO_FATAL_FAILURE(expect_status(shed, 503));
  EXPECT_EQ(shed->header("retry-after"), "1");
  // The refusal keeps the connection, and the health checks see it as one.
  ASSERT_NO_FATAL_FAILURE(expect_status(second.request("GET", "/readyz"), 503));
  http_response slow_res;
  ASSERT_EQ(slow.read_response(slow_res), read_outcome::complete);
  EXPECT_EQ(slow_res.status, 200);  // the running call was never touched
  const json::object stats = stats_where(server, [](const json::object& s) {
    return s.at("rejected").at("queue_wait").as_int64() >= 1;
  });
  EXPECT_EQ(stats.at("rejected").at("queue_wait").as_int64(), 1);
  EXPECT_EQ(stats.at("rejected").at("queue_delay").as_int64(), 0);
  EXPECT_EQ(stats.at("rejected").at("queue_count").as_int64(), 0);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

}  // namespace
}  // namespace knit_test

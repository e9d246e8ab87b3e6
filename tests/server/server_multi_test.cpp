// KNIT_MODE=multi end to end: one io_context run by several threads, every route inline on
// the thread that read the request. What only this mode can get wrong: counters incremented
// from several threads at once, a slow route on one thread while the others serve, the
// stop, the sweep and SIGUSR1 reaching sessions that other threads are running.
//
// The server_mode_test suites (routes, limits, connections, stop, hostile clients) run in
// multi mode too (server_fixture.hpp); these tests add the concurrency. No test asserts on
// timing: deadlines only keep a broken server from hanging the suite.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "http_client.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"

namespace knit_test {
namespace {

namespace json = boost::json;

server_process start_multi(env_map env) {
  env["KNIT_MODE"] = "multi";
  return server_process(env);
}

// Request `i` of client `t`: the three routes in turn, shifted per client so that every
// route is in flight on several threads at once.
enum class kind { ping, ssr, jwt };
kind kind_of(int t, int i) { return static_cast<kind>((t + i) % 3); }

std::string request_for(kind k) {
  switch (k) {
    case kind::ping: return make_request("GET", "/ping");
    case kind::ssr: return make_request("POST", "/ssr", kSsrBody);
    case kind::jwt: return make_request("POST", "/jwt", kJwtBody);
  }
  return {};
}

// The answer is the route's own, not merely a 200: a response crossed between two
// connections would fail here.
bool answers(const http_response& res, kind k) {
  if (res.status != 200) return false;
  switch (k) {
    case kind::ping: return res.body.find("\"pong\":true") != std::string::npos;
    case kind::ssr: return res.body.find("&lt;Ari &amp; Co&gt;") != std::string::npos;
    case kind::jwt: return res.body.find("\"token\"") != std::string::npos;
  }
  return false;
}

TEST(multi_mode, ConcurrentKeepAliveClientsAreAnsweredAndCountedExactly) {
  server_process server = start_multi({{"KNIT_THREADS", "4"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  EXPECT_NE(server.stdout_seen().find("mode: multi (one io_context run by 4 threads"),
            std::string::npos)
      << server.stdout_seen();

  constexpr int kClients = 32;
  constexpr int kRequests = 200;
  std::atomic<int> wrong{0};
  std::atomic<int> clients_done{0};
  std::latch go(kClients + 1);
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      connection c(server.port());
      go.arrive_and_wait();
      for (int i = 0; i < kRequests; ++i) {
        const kind k = kind_of(t, i);
        auto res = c.exchange(request_for(k));
        if (!res || !answers(*res, k)) {
          ADD_FAILURE() << "client " << t << " request " << i << ": "
                        << (res ? std::to_string(res->status) + " " + res->body : "no response");
          ++wrong;
          break;
        }
      }
      ++clients_done;
    });
  }
  // Meanwhile SIGUSR1 walks the sessions and reads the counters while the io threads run
  // them (ThreadSanitizer checks those reads). Bounded: at most 200 signals.
  go.arrive_and_wait();
  for (int i = 0; i < 200 && clients_done.load() < kClients; ++i) {
    server.signal(SIGUSR1);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (auto& t : clients) t.join();
  ASSERT_EQ(wrong.load(), 0);

  // Every response has been read, and a request is counted before it is answered: the
  // totals are final. A lost increment would leave them short forever, and no line match.
  constexpr std::int64_t kTotal = std::int64_t{kClients} * kRequests;
  const json::object stats =
      stats_where(server, [&](const json::object& s) { return total_requests(s) >= kTotal; });
  std::int64_t expected[3] = {0, 0, 0};
  for (int t = 0; t < kClients; ++t) {
    for (int i = 0; i < kRequests; ++i) ++expected[static_cast<int>(kind_of(t, i))];
  }
  EXPECT_EQ(stats.at("mode").as_string(), "multi");
  EXPECT_EQ(requests_of(stats, "ping"), expected[0]);
  EXPECT_EQ(requests_of(stats, "ssr"), expected[1]);
  EXPECT_EQ(requests_of(stats, "jwt"), expected[2]);
  EXPECT_EQ(requests_of(stats, "other"), 0);
  EXPECT_TRUE(stats.at("pool").is_null());
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

TEST(multi_mode, SigtermUnderLoadAnswersEveryStartedRequest) {
  server_process server = start_multi({{"KNIT_THREADS", "4"}, {"KNIT_SSR_COST_US", "2000"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  interrupted_load load;
  load.clients = 32;
  load.answered_before_stop = 500;
  load.max_requests_per_client = 2000;  // bounds the loop if the stop never comes
  // Tagged requests: each answer must name its own request, not merely its route.
  const auto route = [](int t, int i) { return static_cast<tagged_route>(kind_of(t, i)); };
  load.request = [route](int t, int i) { return tagged_request(route(t, i), t, i); };
  // A request that arrived whole only after the stop began gets the stop's 503 + close.
  load.answers = [route](const http_response& res, int t, int i) {
    return answers_tagged(res, route(t, i), t, i) || is_not_started_answer(res);
  };
  EXPECT_EQ(lost_under_sigterm(server, load), 0);
  EXPECT_EQ(server.wait_exit(), 0) << server.stderr_text();
}

TEST(multi_mode, IdleTimeoutClosesIdleConnections) {
  server_process server = start_multi({{"KNIT_THREADS", "4"}, {"KNIT_IDLE_TIMEOUT_MS", "300"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  // One connection idle after a request (keep-alive), one that never sends a byte. The
  // sweep, on whichever thread, must reach both sessions' strands.
  connection after_request(server.port());
  ASSERT_TRUE(after_request.request("GET", "/ping"));
  connection silent(server.port());
  ASSERT_TRUE(silent.connected());

  expect_closed_silently(after_request);
  expect_closed_silently(silent);
  // Both sessions are gone from the server's set too.
  const json::object stats = stats_where(
      server, [](const json::object& s) { return s.at("connections").as_int64() == 0; });
  EXPECT_EQ(stats.at("connections").as_int64(), 0);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

TEST(multi_mode, ASlowSsrDoesNotHoldUpPing) {
  // 200 ms of CPU for each /ssr: in inline mode every other connection would wait for it.
  server_process server = start_multi({{"KNIT_THREADS", "2"}, {"KNIT_SSR_COST_US", "200000"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();

  connection slow(server.port());
  ASSERT_TRUE(slow.send(make_request("POST", "/ssr", kSsrBody)));
  // The stats line proves the /ssr has started: it is counted before its route runs, and
  // the line itself comes from the other thread, while the route holds this one.
  // Short rounds: a round waits out its whole `wait` for a matching line, which a long
  // wait would spend on the /ssr's own run time.
  const json::object started =
      wait_until_counted(server, "ssr", 400, std::chrono::milliseconds(10));
  ASSERT_EQ(requests_of(started, "ssr"), 1);

  // The other thread answers /ping while the /ssr is still running: its response has not
  // arrived when the ping's has.
  connection fast(server.port());
  auto ping = fast.request("GET", "/ping");
  ASSERT_NO_FATAL_FAILURE(expect_status(ping, 200));
  EXPECT_FALSE(slow.readable_now()) << "the /ssr finished before the /ping was answered";

  http_response res;
  ASSERT_EQ(slow.read_response(res), read_outcome::complete);
  EXPECT_TRUE(answers(res, kind::ssr)) << res.status << ' ' << res.body;
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

TEST(multi_mode, TheStopDeadlineCutsASlowClient) {
  // A minute of idle timeout and a half-sent request: the stop grace, or at the latest the
  // stop deadline (cut_slow_clients, posted into the session's strand), ends it. Nothing
  // was answered or lost: exit 0.
  server_process server = start_multi(
      {{"KNIT_THREADS", "4"}, {"KNIT_IDLE_TIMEOUT_MS", "60000"}, {"KNIT_STOP_TIMEOUT_MS", "300"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection slow(server.port(), std::chrono::seconds(30));
  ASSERT_NO_FATAL_FAILURE(send_half_a_request(slow, server.port()));

  server.signal(SIGTERM);
  expect_closed_silently(slow);
  EXPECT_EQ(server.wait_exit(), 0) << server.stderr_text();
}

}  // namespace
}  // namespace knit_test

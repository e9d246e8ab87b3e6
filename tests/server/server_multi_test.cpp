// KNIT_MODE=multi end to end: one io_context run by several threads, every route inline on
// the thread that read the request. What only this mode can get wrong: counters incremented
// from several threads at once, a slow route on one thread while the others serve, the
// stop, the sweep and SIGUSR1 reaching sessions that other threads are running.
//
// The whole ServerTest and HostileTest suites run in multi mode too (server_fixture.hpp);
// these tests add the concurrency. No test asserts on timing: deadlines only keep a broken
// server from hanging the suite.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <memory>
#include <optional>
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

constexpr const char* kSsrBody = R"({"name":"<Ari & Co>","plan":"pro"})";
constexpr const char* kJwtBody = R"({"user":{"id":"u_42","role":"admin"},"ttlSec":900})";

std::int64_t requests_of(const json::object& stats, const char* route) {
  return stats.at("requests").at(route).as_int64();
}

std::int64_t total_requests(const json::object& stats) {
  return requests_of(stats, "ping") + requests_of(stats, "ssr") + requests_of(stats, "jwt") +
         requests_of(stats, "other");
}

server_process start_multi(env_map env) {
  env["KNIT_MODE"] = "multi";
  return server_process(env);
}

// Request `i` of client `t`: the three routes in turn, shifted per client so that every
// route is in flight on several threads at once.
enum class kind { ping, ssr, jwt };
kind kind_of(int t, int i) { return static_cast<kind>((t + i) % 3); }

std::optional<http_response> send_kind(connection& c, kind k) {
  switch (k) {
    case kind::ping: return c.request("GET", "/ping");
    case kind::ssr: return c.request("POST", "/ssr", kSsrBody);
    case kind::jwt: return c.request("POST", "/jwt", kJwtBody);
  }
  return std::nullopt;
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

TEST(MultiModeTest, ConcurrentKeepAliveClientsAreAnsweredAndCountedExactly) {
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
        auto res = send_kind(c, k);
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

TEST(MultiModeTest, SigtermUnderLoadAnswersEveryStartedRequest) {
  server_process server = start_multi({{"KNIT_THREADS", "4"}, {"KNIT_SSR_COST_US", "2000"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();

  constexpr int kClients = 32;
  constexpr int kMaxRequestsPerClient = 2000;  // bounds the loop if the stop never comes
  std::atomic<int> answered{0};
  std::atomic<int> lost{0};  // a response cut short, garbled or wrong: must stay 0
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      // Keep requesting, reconnecting after each close, until connecting fails (the server
      // has stopped listening) or the bound is reached.
      int sent = 0;
      while (sent < kMaxRequestsPerClient) {
        connection c(server.port());
        if (!c.connected()) return;
        for (; sent < kMaxRequestsPerClient; ++sent) {
          const kind k = kind_of(t, sent);
          const std::string request = k == kind::ping  ? make_request("GET", "/ping")
                                      : k == kind::ssr ? make_request("POST", "/ssr", kSsrBody)
                                                       : make_request("POST", "/jwt", kJwtBody);
          if (!c.send(request)) break;  // the server closed first: nothing was started
          http_response res;
          const read_outcome outcome = c.read_response(res);
          if (outcome == read_outcome::closed_cleanly) break;  // closed before answering: allowed
          if (outcome != read_outcome::complete || !answers(res, k)) {
            ADD_FAILURE() << "client " << t << ": " << to_string(outcome) << " status "
                          << res.status;
            ++lost;
            return;
          }
          ++answered;
          if (res.header("connection") == "close") {
            ++sent;
            break;
          }
        }
      }
    });
  }
  // Let the load run, then stop the server in the middle of it.
  for (int i = 0; i < 2000 && answered.load() < 500; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(answered.load(), 1);
  server.signal(SIGTERM);
  for (auto& t : clients) t.join();
  EXPECT_EQ(lost.load(), 0);
  EXPECT_EQ(server.wait_exit(), 0) << server.stderr_text();
}

TEST(MultiModeTest, IdleTimeoutClosesIdleConnections) {
  server_process server = start_multi({{"KNIT_THREADS", "4"}, {"KNIT_IDLE_TIMEOUT_MS", "300"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  // One connection idle after a request (keep-alive), one that never sends a byte. The
  // sweep, on whichever thread, must reach both sessions' strands.
  connection after_request(server.port());
  ASSERT_TRUE(after_request.request("GET", "/ping"));
  connection silent(server.port());
  ASSERT_TRUE(silent.connected());

  std::string received;
  EXPECT_TRUE(after_request.wait_closed(&received));
  EXPECT_EQ(received, "");
  EXPECT_TRUE(silent.wait_closed(&received));
  EXPECT_EQ(received, "");
  // Both sessions are gone from the server's set too.
  const json::object stats =
      stats_where(server, [](const json::object& s) {
        return s.at("connections").as_int64() == 0;
      });
  EXPECT_EQ(stats.at("connections").as_int64(), 0);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

TEST(MultiModeTest, ASlowSsrDoesNotHoldUpPing) {
  // 200 ms of CPU for each /ssr: in inline mode every other connection would wait for it.
  server_process server = start_multi({{"KNIT_THREADS", "2"}, {"KNIT_SSR_COST_US", "200000"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();

  connection slow(server.port());
  ASSERT_TRUE(slow.send(make_request("POST", "/ssr", kSsrBody)));
  // The stats line proves the /ssr has started: it is counted before its route runs, and
  // the line itself comes from the other thread, while the route holds this one.
  // Short rounds: a round waits out its whole `wait` for a matching line, which a long
  // wait would spend on the /ssr's own run time.
  const json::object started = stats_where(
      server, [](const json::object& s) { return requests_of(s, "ssr") >= 1; }, 400,
      std::chrono::milliseconds(10));
  ASSERT_EQ(requests_of(started, "ssr"), 1);

  // The other thread answers /ping while the /ssr is still running: its response has not
  // arrived when the ping's has.
  connection fast(server.port());
  auto ping = fast.request("GET", "/ping");
  ASSERT_TRUE(ping);
  EXPECT_EQ(ping->status, 200);
  EXPECT_FALSE(slow.readable_now()) << "the /ssr finished before the /ping was answered";

  http_response res;
  ASSERT_EQ(slow.read_response(res), read_outcome::complete);
  EXPECT_TRUE(answers(res, kind::ssr)) << res.status << ' ' << res.body;
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

TEST(MultiModeTest, TheStopDeadlineCutsASlowClient) {
  // A minute of idle timeout and a half-sent request: the stop grace, or at the latest the
  // stop deadline (cut_slow_clients, posted into the session's strand), ends it. Nothing
  // was answered or lost: exit 0.
  server_process server = start_multi({{"KNIT_THREADS", "4"},
                                       {"KNIT_IDLE_TIMEOUT_MS", "60000"},
                                       {"KNIT_STOP_TIMEOUT_MS", "300"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection slow(server.port(), std::chrono::seconds(30));
  ASSERT_TRUE(slow.send("POST /jwt HTTP/1.1\r\nContent-Le"));
  // A round trip on another connection gives the server time to read those bytes.
  ASSERT_TRUE(connection(server.port()).request("GET", "/ping"));

  server.signal(SIGTERM);
  std::string received;
  EXPECT_TRUE(slow.wait_closed(&received));
  EXPECT_EQ(received, "");
  EXPECT_EQ(server.wait_exit(), 0) << server.stderr_text();
}

}  // namespace
}  // namespace knit_test

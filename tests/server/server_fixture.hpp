// What the end-to-end server tests share: a knit-server per test in the suite's KNIT_MODE,
// reading its knit-stats lines, the request bodies (tagged ones for loads: each answer names
// its request), and the checks several tests make: a request half sent, a connection closed
// without a byte, a load cut by SIGTERM.
#pragma once

#include <signal.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "http_client.hpp"
#include "server_process.hpp"

namespace knit_test {

using env_map = std::map<std::string, std::string>;

// A profile for /ssr to render (the name must come back escaped) and a user for /jwt to
// sign a token for.
inline constexpr const char* kSsrBody =
    R"({"name":"<Ari & Co>","plan":"pro","bio":"Building on Knitting","projects":17})";
inline constexpr const char* kJwtBody =
    R"({"user":{"id":"u_42","email":"ari@example.com","role":"admin"},"ttlSec":900})";

// The requests a knit-stats line has counted for `route` ("ping", "ssr", "jwt", "other").
inline std::int64_t requests_of(const boost::json::object& stats, const char* route) {
  return stats.at("requests").at(route).as_int64();
}

// Every request the line has counted, all routes together.
inline std::int64_t total_requests(const boost::json::object& stats) {
  return requests_of(stats, "ping") + requests_of(stats, "ssr") + requests_of(stats, "jwt") +
         requests_of(stats, "other");
}

// The "hosts" list's requests (one entry per event loop), in host order.
inline std::vector<std::int64_t> host_requests(const boost::json::object& stats) {
  std::vector<std::int64_t> out;
  for (const boost::json::value& h : stats.at("hosts").as_array()) {
    out.push_back(h.at("requests").as_int64());
  }
  return out;
}

// One of the pool's totals (pooled and auto mode), e.g. "calls_completed".
inline std::int64_t pool_total(const boost::json::object& stats, const char* counter) {
  return stats.at("pool").at("totals").at(counter).as_int64();
}

// The parts of a response that do not depend on the clock: the status, the content type, and
// the body with its timestamps replaced. /ssr stamps the page (ISO 8601, milliseconds); /jwt
// answers {"ok":true,"token":"<header>.<payload>.<signature>","sub":...,"exp":N}, where the
// payload and signature carry iat/exp: the token's header is kept, the rest masked.
inline std::string without_clock(const http_response& res) {
  static const std::regex iso(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)");
  static const std::regex token(R"re("token":"([^".]*)\.[^"]*")re");
  static const std::regex exp(R"("exp":\d+)");
  std::string body = std::regex_replace(res.body, iso, "<time>");
  body = std::regex_replace(body, token, R"("token":"$1.<claims>.<signature>")");
  body = std::regex_replace(body, exp, R"("exp":<exp>)");
  return std::to_string(res.status) + ' ' + res.header("content-type") + '\n' + body;
}

// Reads knit-stats lines (sending SIGUSR1 in every round, so a counter that is still
// changing is read again) until `accept` takes one; fails the test after `tries` rounds of
// at most `wait` each. The deadline only keeps a broken server from hanging the suite.
template <class Accept>
boost::json::object stats_where(server_process& server, Accept accept, int tries = 20,
                                std::chrono::milliseconds wait = std::chrono::milliseconds(500)) {
  static constexpr std::string_view kPrefix = "knit-stats ";
  for (int i = 0; i < tries; ++i) {
    server.signal(SIGUSR1);
    while (auto line = server.read_line(wait)) {
      if (line->rfind(kPrefix, 0) != 0) continue;
      boost::json::object stats = boost::json::parse(line->substr(kPrefix.size())).as_object();
      if (accept(stats)) return stats;
    }
  }
  ADD_FAILURE() << "no knit-stats line matched; stdout so far:\n" << server.stdout_seen();
  return {};
}

// The next knit-stats line.
inline boost::json::object read_stats(server_process& server) {
  return stats_where(server, [](const boost::json::object&) { return true; });
}

// Waits until the server has counted a request to `route`: the request has been taken (and,
// for a pooled route, submitted by the same handler). Returns that stats line.
inline boost::json::object wait_until_counted(
    server_process& server, const char* route, int tries = 20,
    std::chrono::milliseconds wait = std::chrono::milliseconds(500)) {
  return stats_where(
      server, [route](const boost::json::object& s) { return requests_of(s, route) >= 1; }, tries,
      wait);
}

// Waits until the pool holds a call submitted and not completed: its worker is busy.
inline void wait_until_pool_busy(server_process& server) {
  stats_where(server, [](const boost::json::object& s) {
    return pool_total(s, "calls_submitted") > pool_total(s, "calls_completed");
  });
}

// Sends `slow` the start of a request, never the rest. A round trip on another connection
// then gives the server time to read those bytes (had it not, the connection counts as idle,
// which the tests that use this allow too). Call through ASSERT_NO_FATAL_FAILURE.
inline void send_half_a_request(connection& slow, std::uint16_t port) {
  ASSERT_TRUE(slow.send("POST /jwt HTTP/1.1\r\nContent-Le"));
  ASSERT_TRUE(connection(port).request("GET", "/ping"));
}

// Expects `res` to have come back, with `status`; `context` goes into the failure message.
// Call through ASSERT_NO_FATAL_FAILURE: without a response the test cannot go on.
inline void expect_status(const std::optional<http_response>& res, int status,
                          std::string_view context = {}) {
  ASSERT_TRUE(res) << context;
  EXPECT_EQ(res->status, status) << context;
}

// Expects the server to close `c` without sending it a byte.
inline void expect_closed_silently(connection& c) {
  std::string received;
  EXPECT_TRUE(c.wait_closed(&received));
  EXPECT_EQ(received, "");
}

// Sends `raw`, expects a complete response with `status` (copied to `out` when given), then
// the server's close. Call through ASSERT_NO_FATAL_FAILURE.
inline void expect_answer_then_close(connection& c, std::string_view raw, int status,
                                     http_response* out = nullptr) {
  auto res = c.exchange(raw);
  ASSERT_TRUE(res) << raw;
  EXPECT_EQ(res->status, status) << raw;
  if (out) *out = *res;
  EXPECT_TRUE(c.wait_closed()) << raw;
}

// Connects until the server no longer accepts (bounded: 10 s): the stop has begun (it sets
// stopping before it closes the listeners) and has closed every listener. True when it did.
inline bool wait_not_listening(std::uint16_t port) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < give_up) {
    if (!connection(port, std::chrono::seconds(1)).connected()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The stop's answer to a request that arrived whole after the stop began (server.hpp): 503
// with Retry-After and Connection: close, never routed to a worker.
inline bool is_not_started_answer(const http_response& res) {
  return res.status == 503 && res.header("retry-after") == "1" &&
         res.header("connection") == "close";
}

// The routes of a load whose requests each carry their own tag, "c<client>-r<i>", where the
// route echoes one: /ssr's page shows the name, /jwt's answer the user's id as "sub".
enum class tagged_route { ping, ssr, jwt };

inline std::string request_tag(int client, int i) {
  // Appended, not "c" + to_string(...): GCC 12 warns falsely (-Wrestrict) on that.
  std::string tag = "c";
  tag += std::to_string(client);
  tag += "-r";
  tag += std::to_string(i);
  return tag;
}

// Request i of client `client` to `route`, tagged. The /ssr name keeps the characters that
// must come back escaped.
inline std::string tagged_request(tagged_route route, int client, int i) {
  std::string body;
  switch (route) {
    case tagged_route::ping: return make_request("GET", "/ping");
    case tagged_route::ssr:
      body = R"({"name":"<)";
      body += request_tag(client, i);
      body += R"( & Co>","plan":"pro","projects":17})";
      return make_request("POST", "/ssr", body);
    case tagged_route::jwt:
      body = R"({"user":{"id":")";
      body += request_tag(client, i);
      body += R"(","role":"admin"},"ttlSec":900})";
      return make_request("POST", "/jwt", body);
  }
  return {};
}

// Whether `res` is the route's own 200 for that very request: /ping's pong, the /ssr page with
// the request's name escaped in it, the /jwt token for the request's user. A response crossed
// between connections or requests, or any other 200, fails.
inline bool answers_tagged(const http_response& res, tagged_route route, int client, int i) {
  if (res.status != 200) return false;
  const auto has = [&res, client, i](std::string_view before, std::string_view after) {
    std::string part(before);
    part += request_tag(client, i);
    part += after;
    return res.body.find(part) != std::string::npos;
  };
  switch (route) {
    case tagged_route::ping:
      return res.header("content-type") == "application/json" &&
             res.body.find("\"pong\":true") != std::string::npos;
    case tagged_route::ssr:
      return res.header("content-type") == "text/html; charset=UTF-8" &&
             has("<h1>&lt;", " &amp; Co&gt;</h1>");
    case tagged_route::jwt:
      return res.body.find("\"token\"") != std::string::npos && has("\"sub\":\"", "\"");
  }
  return false;
}

// A load that SIGTERM cuts short: `clients` threads send request(t, i), client t's i-th
// request, reconnecting after each close, until connecting fails (the server has stopped
// listening) or a client has sent max_requests_per_client.
struct interrupted_load {
  int clients = 16;
  int answered_before_stop = 300;  // SIGTERM once this many responses have come back
  int max_requests_per_client = INT_MAX;
  std::function<std::string(int client, int i)> request;
  // Whether `res` is the right answer to request(client, i), not merely a response: its
  // route's body for that request (answers_tagged), or the stop's 503 for one not started.
  std::function<bool(const http_response& res, int client, int i)> answers;
};

// Runs `load`, sends SIGTERM in the middle of it, waits for every client, and returns how
// many responses were lost: cut short, garbled, wrong, or never sent for a request the
// server had taken (each one also fails the test).
//
// A connection closed before any byte of a response counts as a request not started only
// with the server's word for it: the server counts a request (knit-stats "requests") when it
// has read it whole, before it answers, so every request it took must have come back
// complete: its count over the load equals the responses the clients read. A server that
// closes on a request it has read, without a byte, fails here. The counters are read after
// the load, while the stop is under way; a witness connection, a request whose head the
// server has read (100 Continue) and whose body is sent only then, keeps the server up till
// that reading, and is answered with the stop's 503 (not counted: read before it is whole).
inline int lost_under_sigterm(server_process& server, const interrupted_load& load) {
  connection witness(server.port());
  EXPECT_TRUE(witness.send(
      "POST /ssr HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n"));
  EXPECT_EQ(witness.read_until("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n");
  const std::int64_t taken_before = total_requests(read_stats(server));

  std::atomic<int> answered{0};
  std::atomic<int> closed_unanswered{0};
  std::atomic<int> lost{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < load.clients; ++t) {
    clients.emplace_back([&, t] {
      int sent = 0;
      while (sent < load.max_requests_per_client) {
        connection c(server.port());
        if (!c.connected()) return;
        for (; sent < load.max_requests_per_client; ++sent) {
          if (!c.send(load.request(t, sent))) break;  // the server closed first
          http_response res;
          const read_outcome outcome = c.read_response(res);
          if (outcome == read_outcome::closed_cleanly) {
            ++closed_unanswered;  // not started, if the server's count agrees (below)
            break;
          }
          if (outcome != read_outcome::complete || !load.answers(res, t, sent)) {
            ADD_FAILURE() << "client " << t << " request " << sent << ": " << to_string(outcome)
                          << " status " << res.status << " body " << res.body.substr(0, 120);
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
  // Let the load run (bounded: 20 s), then stop the server in the middle of it.
  for (int i = 0; i < 2000 && answered.load() < load.answered_before_stop; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(answered.load(), 1);
  server.signal(SIGTERM);
  for (auto& t : clients) t.join();

  // Every client has its last response or its close: the server's count is final.
  const std::int64_t taken = total_requests(read_stats(server)) - taken_before;
  std::printf(
      "[ measured ] under SIGTERM: %d answered, %d closed before a response; the "
      "server took %lld requests whole\n",
      answered.load(), closed_unanswered.load(), static_cast<long long>(taken));
  EXPECT_EQ(taken, answered.load())
      << "the server took requests whole that got no response (a close before any byte "
         "counted as not started): started responses lost";
  if (taken > answered.load()) lost += static_cast<int>(taken - answered.load());

  // The witness, completed now, is not started: the stop's 503, then the close.
  EXPECT_TRUE(witness.send("{}"));
  http_response res;
  EXPECT_EQ(witness.read_response(res), read_outcome::complete);
  EXPECT_TRUE(is_not_started_answer(res)) << res.status << ' ' << res.body;
  EXPECT_TRUE(witness.wait_closed());
  return lost.load();
}

// A suite that runs once per KNIT_MODE (instantiate it with ::testing::Values("inline",
// "pooled", "multi")): each test starts its own server with start(); every test ends with a
// clean stop (SIGTERM, exit code 0) unless it stopped the server itself. Multi mode runs its
// io_context on 4 threads unless the test sets KNIT_THREADS. A parameter such as "inline_h4"
// is the mode with KNIT_HOSTS=4 (4 event loops, each with its own listener on the port).
class server_mode_test : public ::testing::TestWithParam<std::string> {
 protected:
  // The KNIT_MODE part of the parameter.
  std::string mode() const { return GetParam().substr(0, GetParam().find("_h")); }
  // KNIT_HOSTS: the number after "_h", 1 without it.
  int hosts() const {
    const std::size_t at = GetParam().find("_h");
    return at == std::string::npos ? 1 : std::stoi(GetParam().substr(at + 2));
  }
  bool pooled() const { return mode() == "pooled"; }

  // Starts the server in this test's mode; fails the test if it does not come up.
  void start(env_map env = {}) {
    env["KNIT_MODE"] = mode();
    if (hosts() > 1) env["KNIT_HOSTS"] = std::to_string(hosts());
    if (mode() == "multi") env.try_emplace("KNIT_THREADS", "4");
    server_ = std::make_unique<server_process>(env);
    ASSERT_TRUE(server_->wait_listening()) << "stderr:\n" << server_->stderr_text();
  }

  void TearDown() override {
    if (server_ && server_->running()) {
      EXPECT_EQ(server_->stop(), 0) << "stderr:\n" << server_->stderr_text();
    }
  }

  std::uint16_t port() const { return server_->port(); }

  std::unique_ptr<server_process> server_;
};

}  // namespace knit_test

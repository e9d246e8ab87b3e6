// KNIT_HOSTS=H end to end: H event loops, each with its own thread and SO_REUSEPORT listener on
// the same port. What only several loops can get wrong: answers that differ from one loop's,
// connections that all land on one loop, a stats line whose hosts do not add up, a stop that
// misses a loop or waits behind a busy one, and the start-up checks of the setting itself.
//
// The route, stop, limit and connection suites run with several hosts too (server_fixture.hpp
// parameters such as "inline_h4"); these tests add the comparisons across H. No test asserts
// on timing: deadlines only keep a broken server from hanging the suite.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <latch>
#include <numeric>
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

// Everything a response carries but the clock: status, every header (Content-Length included)
// and the body with its timestamps masked (without_clock).
std::string all_but_clock(const http_response& res) {
  std::string out = without_clock(res);
  for (const auto& [name, value] : res.headers) out += '\n' + name + ": " + value;
  return out;
}

struct exchange {
  const char* method;
  const char* target;
  std::string body;
};

// One of every kind of answer that keeps the connection open.
const exchange kExchanges[] = {
    {"GET", "/ping", ""},                           // the host's own route
    {"HEAD", "/ping", ""},                          // its head, no body
    {"GET", "/nope", ""},                           // 404
    {"POST", "/ssr", kSsrBody},                     // a page
    {"POST", "/ssr", "not json"},                   // the default profile's page
    {"POST", "/ssr", std::string(60 * 1024, 'x')},  // a large body
    {"POST", "/jwt", kJwtBody},                     // a token
    {"POST", "/jwt", R"({"user":{}})"},             // 400 Bad request
    {"POST", "/jwt", "not json"},                   // 400 too
};
constexpr int kExchangeCount = static_cast<int>(std::size(kExchanges));

// The answers of a server to each exchange, on one connection.
std::vector<std::string> answers_of(std::uint16_t port) {
  std::vector<std::string> out;
  connection c(port);
  for (const exchange& e : kExchanges) {
    auto res = c.exchange(make_request(e.method, e.target, e.body), e.method[0] == 'H');
    out.push_back(res ? all_but_clock(*res) : "no response");
  }
  return out;
}

server_process start_server(const char* mode, int hosts, env_map env = {}) {
  env["KNIT_MODE"] = mode;
  env["KNIT_HOSTS"] = std::to_string(hosts);
  return server_process(env);
}

// Sends every exchange on each of `clients` connections at once and expects the answers of
// the one-loop server, `expected`. Returns the mismatches.
int mismatches_over_many_connections(std::uint16_t port, const std::vector<std::string>& expected,
                                     int clients) {
  std::atomic<int> wrong{0};
  std::latch go(clients);
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&] {
      connection c(port);
      go.arrive_and_wait();  // every connection open before the first request: all loops busy
      for (int i = 0; i < kExchangeCount; ++i) {
        const exchange& e = kExchanges[i];
        auto res = c.exchange(make_request(e.method, e.target, e.body), e.method[0] == 'H');
        const std::string got = res ? all_but_clock(*res) : "no response";
        if (got != expected[i]) {
          ADD_FAILURE() << e.method << ' ' << e.target << ":\n"
                        << got << "\nexpected:\n"
                        << expected[i];
          ++wrong;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  return wrong.load();
}

// The same requests over many connections at H = 2 and 4 get the same bytes as at H = 1, and
// the kernel spread the connections over more than one loop, as knit-stats shows.
void expect_same_answers_as_one_host(const char* mode) {
  server_process one = start_server(mode, 1);
  ASSERT_TRUE(one.wait_listening()) << one.stderr_text();
  const std::vector<std::string> expected = answers_of(one.port());
  EXPECT_EQ(one.stop(), 0) << one.stderr_text();

  constexpr int kClients = 32;
  for (int hosts : {2, 4}) {
    SCOPED_TRACE(std::string(mode) + " with KNIT_HOSTS=" + std::to_string(hosts));
    // Admission off: up to 32 heavy calls queue at once, and a slow machine or a sanitizer's
    // build would rightly shed some with 503 at the default KNIT_MAX_QUEUE_MS (250 ms).
    server_process many = start_server(mode, hosts, {{"KNIT_MAX_QUEUE_MS", "0"}});
    ASSERT_TRUE(many.wait_listening()) << many.stderr_text();
    EXPECT_EQ(mismatches_over_many_connections(many.port(), expected, kClients), 0);

    // Every response has been read and a request is counted before it is answered: the
    // totals are final.
    constexpr std::int64_t kTotal = std::int64_t{kClients} * kExchangeCount;
    const json::object stats =
        stats_where(many, [&](const json::object& s) { return total_requests(s) >= kTotal; });
    EXPECT_EQ(total_requests(stats), kTotal);
    const std::vector<std::int64_t> per_host = host_requests(stats);
    ASSERT_EQ(per_host.size(), static_cast<std::size_t>(hosts)) << json::serialize(stats);
    EXPECT_EQ(std::accumulate(per_host.begin(), per_host.end(), std::int64_t{0}), kTotal);
    // A connection's requests all go to its loop: each host's count is whole connections.
    const auto busy = std::count_if(per_host.begin(), per_host.end(), [](std::int64_t n) {
      EXPECT_EQ(n % kExchangeCount, 0) << n;
      return n > 0;
    });
    // 32 connections all hashed to one loop: a chance of 2^-31 at H = 2.
    EXPECT_GE(busy, 2) << json::serialize(stats);
    EXPECT_EQ(many.stop(), 0) << many.stderr_text();
  }
}

TEST(hosts, inline_answers_as_one_host_does_and_connections_spread) {
  expect_same_answers_as_one_host("inline");
}

TEST(hosts, asio_answers_as_one_host_does_and_connections_spread) {
  expect_same_answers_as_one_host("asio");
}

// Pooled: every loop is one host of the same knit pool (host 0 the first loop's thread).
TEST(hosts, pooled_answers_as_one_host_does_and_connections_spread) {
  expect_same_answers_as_one_host("pooled");
}

TEST(hosts, banner_names_the_event_loops) {
  for (int hosts : {1, 3}) {
    server_process server = start_server("inline", hosts);
    ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
    const std::string banner = hosts == 1 ? "hosts: 1 (one event loop)\n"
                                          : "hosts: 3 (event loops, each with its own thread";
    EXPECT_NE(server.stdout_seen().find(banner), std::string::npos) << server.stdout_seen();
    connection c(server.port());  // a request before the stop, as in every other test
    EXPECT_TRUE(c.request("GET", "/ping"));
    EXPECT_EQ(server.stop(), 0) << server.stderr_text();
  }
}

TEST(hosts, a_bad_value_exits_2_and_names_it) {
  for (const char* bad : {"0", "-1", "two", "1025", "4x"}) {
    server_process server(env_map{{"KNIT_MODE", "inline"}, {"KNIT_HOSTS", bad}});
    EXPECT_EQ(server.wait_exit(), 2) << bad;
    const std::string err = server.stderr_text();
    EXPECT_NE(err.find("KNIT_HOSTS=\"" + std::string(bad) + "\": expected an integer from 1 to"),
              std::string::npos)
        << err;
  }
}

TEST(hosts, multi_mode_takes_one_host_only) {
  server_process server(env_map{{"KNIT_MODE", "multi"}, {"KNIT_HOSTS", "2"}});
  EXPECT_EQ(server.wait_exit(), 2);
  const std::string err = server.stderr_text();
  EXPECT_NE(err.find("KNIT_HOSTS=\"2\": expected 1 with KNIT_MODE=multi"), std::string::npos)
      << err;
}

TEST(hosts, a_knit_pool_takes_at_most_64_hosts) {
  for (const char* mode : {"pooled", "auto"}) {
    server_process server(env_map{{"KNIT_MODE", mode}, {"KNIT_HOSTS", "65"}});
    EXPECT_EQ(server.wait_exit(), 2) << mode;
    const std::string err = server.stderr_text();
    EXPECT_NE(
        err.find("KNIT_HOSTS=\"65\": expected at most 64 with KNIT_MODE=" + std::string(mode)),
        std::string::npos)
        << err;
  }
}

TEST(hosts, a_port_taken_by_a_one_loop_server_exits_1_naming_it) {
  // The first server has no SO_REUSEPORT (one loop never sets it), so a server with several
  // loops cannot join its port: it must fail to listen, not take half of its connections.
  server_process first = start_server("inline", 1);
  ASSERT_TRUE(first.wait_listening()) << first.stderr_text();
  const std::string port = std::to_string(first.port());
  for (int hosts : {1, 2}) {
    server_process second = start_server("inline", hosts, {{"PORT", port}});
    EXPECT_EQ(second.wait_exit(), 1) << hosts;
    const std::string err = second.stderr_text();
    EXPECT_NE(err.find("cannot listen on 127.0.0.1:" + port), std::string::npos) << err;
  }
  connection c(first.port());  // the first server still answers
  EXPECT_TRUE(c.request("GET", "/ping"));
  EXPECT_EQ(first.stop(), 0) << first.stderr_text();
}

// A job that will not end in the test's lifetime on one loop, a 300 ms stop timeout: the stop
// deadline, run by the control thread, not by the busy loop, gives the connection up and the
// process exits 3 long before the job could end. (With one inline loop the signal itself waits
// for the job: that loop is the only thread.)
void expect_stop_deadline_exits_3(const char* mode, int hosts) {
  server_process server = start_server(
      mode, hosts, {{"KNIT_SSR_COST_US", "10000000"}, {"KNIT_STOP_TIMEOUT_MS", "300"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection busy(server.port());
  ASSERT_TRUE(busy.send(make_request("POST", "/ssr", kSsrBody)));
  // Counted by the loop that runs it, read by the control thread while that loop is busy.
  wait_until_counted(server, "ssr", 500, std::chrono::milliseconds(20));
  // Another loop still answers meanwhile, on a connection the kernel may hash to any loop:
  // retried on fresh connections until one lands elsewhere (bounded).
  bool pinged = false;
  for (int i = 0; i < 64 && !pinged; ++i) {
    connection c(server.port(), std::chrono::milliseconds(200));
    pinged = c.request("GET", "/ping").has_value();
  }
  EXPECT_TRUE(pinged);
  server.signal(SIGTERM);
  // wait_exit's 8 s is below the job's 10 s: a stop that waited for the job fails here.
  EXPECT_EQ(server.wait_exit(std::chrono::seconds(8)), 3) << server.stderr_text();
  const std::string err = server.stderr_text();
  EXPECT_NE(err.find("1 connections still open"), std::string::npos) << err;
  EXPECT_NE(err.find("exiting with code 3"), std::string::npos) << err;
}

TEST(hosts, inline_stop_deadline_with_a_job_that_will_not_finish_exits_3) {
  expect_stop_deadline_exits_3("inline", 2);
}

TEST(hosts, asio_stop_deadline_with_a_job_that_will_not_finish_exits_3) {
  expect_stop_deadline_exits_3("asio", 4);
}

// The hosts are attached to the pool: each gives its own calls up on its own loop, so the
// waiting client gets its 503 from the loop it is on (and the control thread's pool
// shutdown never waits for hosts that are still attached).
TEST(hosts, pooled_stop_deadline_with_a_job_that_will_not_finish_exits_3) {
  expect_stop_deadline_exits_3("pooled", 2);
}

// A pooled call stuck on one loop: 504 there, its worker replaced by the control thread (the
// pool's builder), and every loop's later calls still served by the pool.
TEST(hosts, a_stuck_call_on_one_loop_gets_504_and_the_pool_goes_on) {
  server_process server = start_server("pooled", 2,
                                       {{"KNIT_SSR_COST_US", "10000000"},
                                        {"KNIT_STUCK_MS", "200"},
                                        {"KNIT_THREADS", "2"},
                                        {"KNIT_STOP_TIMEOUT_MS", "300"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  {
    connection c(server.port());
    const auto res = c.request("POST", "/ssr", kSsrBody);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 504);
  }
  const json::object stats = stats_where(server, [](const json::object& s) {
    return s.at("pool")
               .as_object()
               .at("totals")
               .as_object()
               .at("workers_replaced")
               .to_number<std::int64_t>() == 1;
  });
  // Later /jwt calls from fresh connections, spread over both loops by the kernel.
  for (int i = 0; i < 20; ++i) {
    connection c(server.port());
    const auto res = c.request("POST", "/jwt", kJwtBody);
    ASSERT_TRUE(res) << i;
    EXPECT_EQ(res->status, 200) << i;
  }
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait_exit(std::chrono::seconds(8)), 0) << server.stderr_text();
  EXPECT_NE(server.stderr_text().find("worker threads still running a stuck task were left"),
            std::string::npos)
      << server.stderr_text();
}

// /metrics on a pooled server with two loops carries the pool's counters (read on the loop
// that answers, an attached host of the pool), one series per pool host.
TEST(hosts, pooled_metrics_carry_the_pools_counters) {
  server_process server = start_server("pooled", 2, {{"KNIT_THREADS", "2"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  for (int i = 0; i < 4; ++i) {
    connection c(server.port());
    const auto res = c.request("POST", "/jwt", kJwtBody);
    ASSERT_TRUE(res) << i;
    EXPECT_EQ(res->status, 200) << i;
  }
  connection c(server.port());
  const auto metrics = c.request("GET", "/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("knit_pool_threads 2\n"), std::string::npos) << metrics->body;
  EXPECT_NE(metrics->body.find("knit_pool_calls_submitted_total{host=\"1\"}"), std::string::npos)
      << metrics->body;
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait_exit(std::chrono::seconds(8)), 0) << server.stderr_text();
}

void expect_sigusr1_lines_whose_hosts_add_up_while_loaded(const char* mode) {
  server_process server = start_server(mode, 4);
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  constexpr int kClients = 16;
  constexpr int kRequests = 100;
  std::atomic<int> clients_done{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&] {
      connection c(server.port());
      for (int i = 0; i < kRequests; ++i) {
        if (!c.request(i % 2 ? "GET" : "POST", i % 2 ? "/ping" : "/jwt", i % 2 ? "" : kJwtBody)) {
          ADD_FAILURE() << "request " << i << " not answered";
          break;
        }
      }
      ++clients_done;
    });
  }
  // Each SIGUSR1 gives one line, read while every loop counts: its parts add up to its total.
  // At least 5 lines, more while the load lasts, at most 200.
  int lines = 0;
  while ((lines < 5 || clients_done.load() < kClients) && lines < 200) {
    const json::object stats = read_stats(server);
    const std::vector<std::int64_t> per_host = host_requests(stats);
    EXPECT_EQ(per_host.size(), 4u);
    EXPECT_EQ(std::accumulate(per_host.begin(), per_host.end(), std::int64_t{0}),
              total_requests(stats));
    ++lines;
  }
  for (auto& t : clients) t.join();
  const json::object stats = stats_where(server, [&](const json::object& s) {
    return total_requests(s) >= std::int64_t{kClients} * kRequests;
  });
  EXPECT_EQ(total_requests(stats), std::int64_t{kClients} * kRequests);
  EXPECT_EQ(requests_of(stats, "jwt"), std::int64_t{kClients} * kRequests / 2);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

TEST(hosts, sigusr1_prints_one_line_whose_hosts_add_up_while_loaded) {
  expect_sigusr1_lines_whose_hosts_add_up_while_loaded("inline");
}

// Pooled, the /jwt calls going through the one pool that the four loops share.
TEST(hosts, pooled_sigusr1_prints_one_line_whose_hosts_add_up_while_loaded) {
  expect_sigusr1_lines_whose_hosts_add_up_while_loaded("pooled");
}

}  // namespace
}  // namespace knit_test

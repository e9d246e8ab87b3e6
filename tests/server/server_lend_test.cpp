// A slow call lends a worker instead of refusing the calls behind it (src/lent_workers.cpp,
// KNIT_LEND_WORKERS): one worker thread held by a long /ssr, and the /jwt calls sent beside
// it on other connections, over two event loops, are answered 200, not 503 by the queue-wait
// deadline; a stuck call still fails alone at its own limit. Under KNIT_ISOLATION=process the
// host's ring lends a worker process the same way (src/process/process_ring_lend.cpp).
#include <string>

#include <gtest/gtest.h>

#include "server_fixture.hpp"

namespace {

using namespace knit_test;

// The queue-wait deadline at 2 s (lending at 1 s): a margin for a lent thread to start on a
// loaded machine, and still far below the slow call, so without lending the calls get 503.
server_process start_one_worker(env_map env) {
  env.insert({{"KNIT_MODE", "pooled"},
              {"KNIT_HOSTS", "2"},
              {"KNIT_THREADS", "1"},
              {"KNIT_MAX_QUEUE_WAIT_MS", "2000"}});
  return server_process(env);
}

// Sends /ssr on `slow` without reading the answer, then waits until the pool took it (not
// until it is seen running: a stats round trip on a loaded machine may outlast a stuck limit).
void start_slow_ssr(server_process& server, connection& slow) {
  ASSERT_TRUE(slow.send(make_request("POST", "/ssr", kSsrBody)));
  stats_where(server,
              [](const boost::json::object& s) { return pool_total(s, "calls_submitted") >= 1; });
}

void expect_jwts_answered_200(std::uint16_t port, int n) {
  for (int i = 0; i < n; ++i) {
    connection c(port);
    const auto res = c.request("POST", "/jwt", kJwtBody);
    ASSERT_TRUE(res) << i;
    EXPECT_EQ(res->status, 200) << i << ": " << res->body;
  }
}

// The server up, a long /ssr holding its only worker, `jwts` /jwt sent beside it each
// answered 200 (expect_jwts_answered_200), then the /ssr's own response in `ssr`.
void hold_the_worker_beside_jwts(server_process& server, int jwts, http_response& ssr) {
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection slow(server.port(), std::chrono::seconds(90));
  ASSERT_NO_FATAL_FAILURE(start_slow_ssr(server, slow));
  ASSERT_NO_FATAL_FAILURE(expect_jwts_answered_200(server.port(), jwts));
  ASSERT_EQ(slow.read_response(ssr), read_outcome::complete);
}

TEST(lend, cheap_calls_beside_a_long_call_on_the_only_worker_get_200) {
  server_process server = start_one_worker({{"KNIT_SSR_COST_US", "3000000"}});
  http_response ssr;
  ASSERT_NO_FATAL_FAILURE(hold_the_worker_beside_jwts(server, 10, ssr));
  EXPECT_EQ(ssr.status, 200) << "the held call's own answer";

  connection c(server.port());
  const auto metrics = c.request("GET", "/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->body.find("knit_pool_lent_workers_started_total 0\n"), std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find("knit_pool_lent_workers_started_total "), std::string::npos);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

// One event loop (its ring has the only worker process), the /ssr holding that process: the
// /jwt calls behind it run on a lent worker process, which is retired once idle.
TEST(lend, under_process_isolation_the_calls_beside_a_long_call_run_on_a_lent_process) {
  server_process server = start_one_worker({{"KNIT_HOSTS", "1"},
                                            {"KNIT_ISOLATION", "process"},
                                            {"KNIT_WORKER_SPARE", "0"},
                                            {"KNIT_SSR_COST_US", "3000000"}});
  http_response ssr;
  ASSERT_NO_FATAL_FAILURE(hold_the_worker_beside_jwts(server, 10, ssr));
  EXPECT_EQ(ssr.status, 200) << "the held call's own answer";
  // Retired once idle: every lent worker process ended (the stats say so).
  const auto stats = stats_where(server, [](const boost::json::object& s) {
    return pool_total(s, "lent_workers_started") >= 1 && pool_total(s, "lent_workers_now") == 0;
  });
  EXPECT_EQ(pool_total(stats, "lent_workers_retired"), pool_total(stats, "lent_workers_started"));
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

TEST(lend, a_stuck_call_fails_alone_and_the_calls_beside_and_after_it_get_200) {
  server_process server = start_one_worker({{"KNIT_SSR_COST_US", "10000000"},
                                            {"KNIT_STUCK_MS", "3000"},
                                            {"KNIT_STOP_TIMEOUT_MS", "300"}});
  http_response ssr;
  ASSERT_NO_FATAL_FAILURE(hold_the_worker_beside_jwts(server, 3, ssr));
  EXPECT_EQ(ssr.status, 504);
  ASSERT_NO_FATAL_FAILURE(expect_jwts_answered_200(server.port(), 3));
  server.signal(SIGTERM);
  EXPECT_EQ(server.wait_exit(std::chrono::seconds(8)), 0) << server.stderr_text();
}

}  // namespace

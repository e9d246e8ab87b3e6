// Held wakes in knit-server (pool_options::wake_at_turn_end, set with KNIT_HEAVY_SHARE=0):
// the server pinned to one CPU, so its loop and workers share it and every wake is held to
// the end of the loop's turn. A lone request on a connection is the only submit of its turn:
// only the flush asio_host posts can wake the worker for it, so a lost flush hangs it here.
#include <sched.h>

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "server_fixture.hpp"
#include "support/pin_thread.hpp"

namespace {

using namespace knit_test;

// knit-server with its heavy share off, started from a thread pinned to one CPU (the child
// inherits the mask), its pool's workers sharing that CPU with its loop. Admission is off
// (KNIT_MAX_QUEUE_MS=0): on one CPU of a slow machine or under a sanitizer, 16 heavy calls
// queued at once may rightly expect more than the default 250 ms, and shedding is not what
// these tests check.
server_process start_on_one_cpu(const char* threads) {
  const std::vector<int> cpus = my_cpus();
  EXPECT_FALSE(cpus.empty());
  pin_host pin(cpus.empty() ? 0 : cpus.front());
  EXPECT_TRUE(pin.ok());
  return server_process({{"KNIT_MODE", "pooled"},
                         {"KNIT_THREADS", threads},
                         {"KNIT_HEAVY_SHARE", "0"},
                         {"KNIT_MAX_QUEUE_MS", "0"}});
}

TEST(held_wakes_server, lone_heavy_requests_one_after_another_are_all_answered) {
  server_process server = start_on_one_cpu("1");
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection c(server.port());
  for (int i = 0; i < 50; ++i) {
    const auto jwt = c.request("POST", "/jwt", kJwtBody);
    ASSERT_TRUE(jwt) << i;
    EXPECT_EQ(jwt->status, 200) << i;
    const auto ssr = c.request("POST", "/ssr", kSsrBody);
    ASSERT_TRUE(ssr) << i;
    EXPECT_EQ(ssr->status, 200) << i;
  }
  const boost::json::object s = stats_where(server, [](const boost::json::object& st) {
    return pool_total(st, "calls_completed") >= 100;
  });
  EXPECT_EQ(pool_total(s, "calls_submitted"), 100);
  EXPECT_EQ(pool_total(s, "calls_completed"), 100);
}

TEST(held_wakes_server, many_connections_at_once_are_all_answered) {
  server_process server = start_on_one_cpu("2");
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  constexpr int kClients = 16, kEach = 20;
  std::vector<int> ok(kClients, 0);
  std::vector<std::thread> clients;
  for (int k = 0; k < kClients; ++k) {
    clients.emplace_back([&, k] {
      connection c(server.port());
      for (int i = 0; i < kEach; ++i) {
        const auto res =
            c.request("POST", (i + k) % 2 ? "/jwt" : "/ssr", (i + k) % 2 ? kJwtBody : kSsrBody);
        if (res && res->status == 200) ++ok[k];
      }
    });
  }
  for (auto& t : clients) t.join();
  for (int k = 0; k < kClients; ++k) EXPECT_EQ(ok[k], kEach) << "client " << k;
}

}  // namespace

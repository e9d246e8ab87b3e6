// stats.hpp: the exact knit-stats line the benchmark driver parses.
#include "telemetry/stats.hpp"  // first: the header must be self-contained

#include <gtest/gtest.h>

namespace knit_server {
namespace {

TEST(stats, counts_by_route) {
  request_counters c;
  c.count(route::ping);
  c.count(route::ping);
  c.count(route::ssr);
  c.count(route::jwt);
  c.count(route::not_found);
  EXPECT_EQ(c.ping.load(), 2u);
  EXPECT_EQ(c.ssr.load(), 1u);
  EXPECT_EQ(c.jwt.load(), 1u);
  EXPECT_EQ(c.other.load(), 1u);
}

TEST(stats, inline_line) {
  request_counters c{3, 2, 1, 0};
  EXPECT_EQ(format_stats_line(exec_mode::inline_host, c, {}, {}, std::nullopt),
            R"(knit-stats {"mode":"inline","requests":{"ping":3,"ssr":2,"jwt":1,"other":0,)"
            R"("plaintext":0},)"
            R"("rejected":{"queue_delay":0,"queue_count":0,"pool_full":0,"write_budget":0,)"
            R"("queue_wait":0},)"
            R"("connections":0,"buffered_bytes":0,"log_dropped":0,"parked_bytes":0,"writes":0,)"
            R"("pool":null,"isolation":"thread"})");
}

TEST(stats, pooled_line_embeds_the_pool_json) {
  request_counters c{1, 0, 0, 7};
  EXPECT_EQ(format_stats_line(exec_mode::pooled, c, {}, {}, std::string_view(R"({"threads":1})")),
            R"(knit-stats {"mode":"pooled","requests":{"ping":1,"ssr":0,"jwt":0,"other":7,)"
            R"("plaintext":0},)"
            R"("rejected":{"queue_delay":0,"queue_count":0,"pool_full":0,"write_budget":0,)"
            R"("queue_wait":0},)"
            R"("connections":0,"buffered_bytes":0,"log_dropped":0,"parked_bytes":0,"writes":0,)"
            R"("pool":{"threads":1},"isolation":"thread"})");
}

TEST(stats, rejections_and_gauges) {
  const std::string line = format_stats_line(exec_mode::pooled, {}, {4, 5, 6, 3, 2},
                                             {7, 8192, 9, 65536}, std::string_view("{}"));
  EXPECT_NE(line.find(R"("rejected":{"queue_delay":4,"queue_count":5,"pool_full":6,)"
                      R"("write_budget":3,"queue_wait":2})"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find(R"("connections":7,"buffered_bytes":8192,"log_dropped":9,)"
                      R"("parked_bytes":65536,)"),
            std::string::npos)
      << line;
}

TEST(stats, hosts_list_each_loops_part) {
  const host_figures hosts[] = {{5, 2}, {0, 0}, {7, 1}};
  const std::string line =
      format_stats_line(exec_mode::inline_host, {}, {}, {}, std::nullopt, std::nullopt, hosts);
  EXPECT_NE(line.find(R"("pool":null,"isolation":"thread","hosts":[{"requests":5,"connections":2},)"
                      R"({"requests":0,"connections":0},{"requests":7,"connections":1}]})"),
            std::string::npos)
      << line;
}

TEST(stats, counters_add_up) {
  request_counters a{1, 2, 3, 4};
  const request_counters b{10, 20, 30, 40};
  a.add(b);
  EXPECT_EQ(a.ping.load(), 11u);
  EXPECT_EQ(a.other.load(), 44u);
  EXPECT_EQ(a.total(), 110u);
  rejection_counters r{1, 2, 3, 0, 5};
  r.add(rejection_counters{1, 1, 1, 0, 1});
  EXPECT_EQ(r.queue_delay.load() + r.queue_count.load() + r.pool_full.load(), 9u);
  EXPECT_EQ(r.queue_wait.load(), 6u);
}

}  // namespace
TEST(stats, process_isolation_adds_the_worker_processes) {
  const worker_process_figures workers{3, 2, 1, 4, 1, 0, 0, 5, 6, 7};
  const std::string line = format_stats_line(exec_mode::pooled, {}, {}, {}, std::string_view("{}"),
                                             std::nullopt, {}, workers);
  EXPECT_NE(line.find(R"("pool":{},"isolation":"process","workers":{"crashed":3,"respawned":2,)"
                      R"("killed":1,"live":4,"degraded":1,"sandbox_kills":0,"memory_kills":0,)"
                      R"("resent":5,"moved":6,"protocol_kills":7}})"),
            std::string::npos)
      << line;
}

}  // namespace knit_server

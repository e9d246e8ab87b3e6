// case_process as knit-server, against the fake server: start checks, stats over SIGUSR1,
// stop by PID; and the single-instance lock.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "driver/run/plan.hpp"
#include "driver/run/server_stats.hpp"
#include "driver/system/case_process.hpp"
#include "driver/system/cpu_sampler.hpp"
#include "driver/system/port.hpp"
#include "driver/system/single_instance.hpp"

namespace knit::bench {
namespace {

process_options fake_options(const std::string& mode = "pooled") {
  process_options o;
  o.exe = KNIT_FAKE_SERVER;
  o.port = pick_free_port();
  plan_case c;
  c.tag = "x";
  c.server_mode = mode;
  c.threads = mode == "pooled" ? 2 : 0;
  o.env = server_env(c, o.host, o.port);
  o.log_path = ::testing::TempDir() + "fake_server_" + std::to_string(o.port) + ".log";
  o.ready_timeout_s = 10;
  return o;
}

TEST(server_process, StartStatsStop) {
  process_options o = fake_options();
  case_process srv(o);
  ASSERT_GT(srv.pid(), 0);
  EXPECT_FALSE(port_is_free(o.host, o.port));
  auto a = srv.request_stats();
  auto b = srv.request_stats();
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(a->has_pool);
  EXPECT_EQ(a->pool_threads, 2);
  auto d = diff_counters(a->pool_totals, b->pool_totals);
  EXPECT_DOUBLE_EQ(d.at("calls_submitted"), 1000);
  EXPECT_DOUBLE_EQ(per_call(d).at("host_wakes"), 0.25);
  EXPECT_GE(thread_count(srv.pid()), 3);  // main, acceptor, two fake workers
  cpu_sample s = sample_cpu(srv.pid());
  EXPECT_GE(s.ticks_s, 0);
  EXPECT_EQ(srv.stop(), "");  // clean exit on SIGTERM
  EXPECT_FALSE(srv.running());
  EXPECT_TRUE(port_is_free(o.host, o.port));
}

TEST(server_process, RefusesABusyPort) {
  process_options o = fake_options();
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(o.port));
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  try {
    case_process srv(o);
    FAIL() << "started on a busy port";
  } catch (const case_error& e) {
    EXPECT_NE(std::string(e.what()).find("not free"), std::string::npos) << e.what();
  }
  ::close(fd);
}

TEST(server_process, ServerThatExitsIsACaseError) {
  process_options o = fake_options();
  o.env["FAKE_EXIT_CODE"] = "2";  // like knit-server rejecting an invalid value
  try {
    case_process srv(o);
    FAIL() << "accepted a server that exited";
  } catch (const case_error& e) {
    std::string w = e.what();
    EXPECT_TRUE(w.find("exit code 2") != std::string::npos || w.find("zombie") != std::string::npos)
        << w;
  }
  EXPECT_TRUE(port_is_free(o.host, o.port));
}

TEST(server_process, NoListeningLineTimesOut) {
  process_options o = fake_options();
  o.env["FAKE_NO_LISTEN_LINE"] = "1";
  o.ready_timeout_s = 0.5;
  try {
    case_process srv(o);
    FAIL() << "ready without a listening line";
  } catch (const case_error& e) {
    EXPECT_NE(std::string(e.what()).find("not ready"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(port_is_free(o.host, o.port));  // the half-started server was stopped
}

TEST(server_process, InlineStatsHaveNoPool) {
  process_options o = fake_options("inline");
  case_process srv(o);
  auto s = srv.request_stats();
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->has_pool);
  EXPECT_EQ(s->mode, "inline");
  EXPECT_DOUBLE_EQ(s->requests.at("ping"), 100);
}

TEST(server_stats, ParsesTheContractLine) {
  auto s = parse_stats_line(
      R"(knit-stats {"mode":"pooled","requests":{"ping":5,"ssr":2,"jwt":1},)"
      R"("pool":{"threads":4,"totals":{"calls_submitted":10,"host_wakes":3,"nested":{"x":1}},)"
      R"("workers":[{"calls_run":5}]}})");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->pool_threads, 4);
  EXPECT_DOUBLE_EQ(s->pool_totals.at("host_wakes"), 3);
  EXPECT_DOUBLE_EQ(s->pool_totals.at("nested.x"), 1);
  EXPECT_FALSE(parse_stats_line("listening on http://127.0.0.1:3000"));
  EXPECT_FALSE(parse_stats_line("knit-stats {broken"));
}

TEST(single_instance, SecondLockIsRefused) {
  const std::string path = ::testing::TempDir() + "knit-bench-test.lock";
  {
    instance_lock first(path);
    try {
      instance_lock second(path);
      FAIL() << "two locks held at once";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("PID " + std::to_string(::getpid())), std::string::npos)
          << e.what();
    }
  }
  EXPECT_NO_THROW(instance_lock again(path));  // released with the first
}

TEST(single_instance, FindsRunningServersByExe) {
  process_options o = fake_options();
  case_process srv(o);
  auto found = processes_running({KNIT_FAKE_SERVER}, ::getpid());
  EXPECT_NE(std::find(found.begin(), found.end(), srv.pid()), found.end());
}

}  // namespace
}  // namespace knit::bench

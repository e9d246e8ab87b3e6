// The control thread (server/main.cpp): whatever KNIT_HOSTS is, main runs no event loop, only
// the signals, the stop and its deadline; the loops run on threads of their own. So with one
// inline loop busy in a job that will not end in the test's lifetime, SIGUSR1 is still
// answered (the stats line is read and printed by main) and SIGTERM's stop deadline still
// gives the connection up and exits 3, long before the job could end. No test asserts on
// timing: deadlines only keep a broken server from hanging the suite.
#include <signal.h>

#include <chrono>
#include <string>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "http_client.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"

namespace knit_test {
namespace {

TEST(control_thread, one_busy_inline_loop_still_answers_sigusr1_and_its_stop_deadline) {
  server_process server({{"KNIT_MODE", "inline"},
                         {"KNIT_HOSTS", "1"},
                         {"KNIT_SSR_COST_US", "10000000"},
                         {"KNIT_STOP_TIMEOUT_MS", "300"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection busy(server.port());
  ASSERT_TRUE(busy.send(make_request("POST", "/ssr", kSsrBody)));
  // Counted by the only loop, which then runs the job for 10 s: the line comes from main.
  const boost::json::object stats = wait_until_counted(server, "ssr");
  EXPECT_EQ(requests_of(stats, "ssr"), 1) << server.stdout_seen();
  server.signal(SIGTERM);
  // wait_exit's 8 s is below the job's 10 s: a stop that waited for the job fails here.
  EXPECT_EQ(server.wait_exit(std::chrono::seconds(8)), 3) << server.stderr_text();
  const std::string err = server.stderr_text();
  EXPECT_NE(err.find("1 connections still open"), std::string::npos) << err;
}

}  // namespace
}  // namespace knit_test

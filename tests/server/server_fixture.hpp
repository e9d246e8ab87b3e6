// What the end-to-end server tests share: a knit-server per test in the suite's KNIT_MODE,
// and reading its knit-stats lines.
#pragma once

#include <signal.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include "server_process.hpp"

namespace knit_test {

using env_map = std::map<std::string, std::string>;

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

// A suite that runs once per KNIT_MODE (instantiate it with ::testing::Values("inline",
// "pooled", "multi")): each test starts its own server with start(); every test ends with a
// clean stop (SIGTERM, exit code 0) unless it stopped the server itself. Multi mode runs its
// io_context on 4 threads unless the test sets KNIT_THREADS.
class server_mode_test : public ::testing::TestWithParam<std::string> {
 protected:
  bool pooled() const { return GetParam() == "pooled"; }

  // Starts the server in this test's mode; fails the test if it does not come up.
  void start(env_map env = {}) {
    env["KNIT_MODE"] = GetParam();
    if (GetParam() == "multi") env.try_emplace("KNIT_THREADS", "4");
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

// KNIT_IO end to end (docs/server-io.md): the banner names what each loop waits in, epoll
// when asked, io_uring or the reason it is refused by default, and the combinations refused at
// start-up. (Every other e2e test runs through the default, and a subset again with epoll:
// tests/server/CMakeLists.txt.)
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "http_client.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"

namespace knit_test {
namespace {

// Starts a server with `env`, answers a /ping and returns the banner's "io:" line.
std::string io_line_of(const env_map& env) {
  server_process server(env);
  if (!server.wait_listening()) {
    ADD_FAILURE() << server.stderr_text();
    return {};
  }
  connection c(server.port());
  EXPECT_TRUE(c.request("GET", "/ping"));
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
  const std::string out = server.stdout_seen();
  const std::size_t at = out.find("\nio: ");
  if (at == std::string::npos) return {};
  return out.substr(at + 1, out.find('\n', at + 1) - at - 1);
}

TEST(server_io, the_default_takes_the_ring_or_says_why_not) {
  const std::string line = io_line_of(env_map{{"KNIT_IO", "auto"}});
  const bool ring = line.starts_with("io: io_uring (");
  const bool refused = line.starts_with("io: epoll (KNIT_IO=auto; no io_uring: ");
  EXPECT_TRUE(ring || refused) << line;
}

// Refused as a container's seccomp profile refuses it: auto falls back to epoll, says why, and
// serves; uring does not start.
TEST(server_io, a_refused_ring_falls_back_to_epoll_and_serves) {
  EXPECT_EQ(io_line_of(env_map{{"KNIT_IO", "auto"}, {std::string(kRefuseIoUring), "1"}}),
            "io: epoll (KNIT_IO=auto; no io_uring: io_uring_setup: Operation not permitted)");
}

TEST(server_io, a_refused_ring_with_uring_exits_1_and_says_why) {
  server_process server(env_map{{"KNIT_IO", "uring"}, {std::string(kRefuseIoUring), "1"}});
  EXPECT_EQ(server.wait_exit(), 1);  // cannot start, as a port that cannot be bound
  EXPECT_NE(server.stderr_text().find("KNIT_IO=uring: io_uring_setup: Operation not permitted"),
            std::string::npos)
      << server.stderr_text();
}

TEST(server_io, epoll_when_asked) {
  EXPECT_EQ(io_line_of(env_map{{"KNIT_IO", "epoll"}}), "io: epoll (KNIT_IO=epoll: Asio's reactor)");
}

TEST(server_io, multi_mode_runs_asios_own_loop) {
  EXPECT_EQ(io_line_of(env_map{{"KNIT_MODE", "multi"}, {"KNIT_THREADS", "2"}}),
            "io: epoll (multi mode: KNIT_THREADS threads run Asio's own loop)");
}

TEST(server_io, uring_with_multi_mode_exits_2_and_says_why) {
  server_process server(env_map{{"KNIT_MODE", "multi"}, {"KNIT_IO", "uring"}});
  EXPECT_EQ(server.wait_exit(), 2);
  EXPECT_NE(server.stderr_text().find("KNIT_IO"), std::string::npos) << server.stderr_text();
}

TEST(server_io, a_bad_value_exits_2_and_names_the_choices) {
  server_process server(env_map{{"KNIT_IO", "kqueue"}});
  EXPECT_EQ(server.wait_exit(), 2);
  EXPECT_NE(server.stderr_text().find("KNIT_IO"), std::string::npos) << server.stderr_text();
  EXPECT_NE(server.stderr_text().find("epoll"), std::string::npos) << server.stderr_text();
}

// A keep-alive connection leaves Asio's epoll set after its first response (the ring reads
// it); each of Asio's own operations on it afterwards (a body that comes after its head, a
// 100 Continue and the body behind it) puts it back first. Without that the body's read would
// wait for an epoll event that never comes, and this test would time out.
TEST(server_io, a_kept_connection_the_ring_reads_still_takes_asios_reads) {
  server_process server(env_map{{"KNIT_IO", "auto"}, {"KNIT_MODE", "inline"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection c(server.port());
  ASSERT_NO_FATAL_FAILURE(expect_status(c.request("GET", "/ping"), 200, "first /ping"));
  for (int round = 0; round < 3; ++round) {
    const std::string context = "round " + std::to_string(round);
    const std::string body = kJwtBody;
    // The head alone; the body once the server has had time to parse it and wait for more.
    ASSERT_TRUE(c.send("POST /jwt HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                       std::to_string(body.size()) + "\r\n\r\n"));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_NO_FATAL_FAILURE(expect_status(c.exchange(body), 200, context + ": late body"));
    ASSERT_NO_FATAL_FAILURE(expect_status(c.request("GET", "/ping"), 200, context + ": /ping"));
    ASSERT_TRUE(
        c.send("POST /jwt HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
               "Content-Length: " +
               std::to_string(body.size()) + "\r\n\r\n"));
    EXPECT_EQ(c.read_until("\r\n\r\n"), "HTTP/1.1 100 Continue\r\n\r\n") << context;
    ASSERT_NO_FATAL_FAILURE(expect_status(c.exchange(body), 200, context + ": after 100"));
  }
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

}  // namespace
}  // namespace knit_test

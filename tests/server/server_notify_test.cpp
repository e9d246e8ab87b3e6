// End-to-end tests of knit-server's sd_notify messages (server/ops/service_notify.hpp): the test
// plays systemd's part, owning the AF_UNIX datagram socket that NOTIFY_SOCKET names, and
// checks that "READY=1" comes once the port accepts and "STOPPING=1" once SIGTERM starts
// the stop, with one event loop and with two. Skipped when knit-server was built without
// libsystemd (KNIT_SYSTEMD=OFF, or AUTO without libsystemd-dev): it then sends nothing.
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "http_client.hpp"
#include "ops/service_notify.hpp"
#include "server_fixture.hpp"
#include "server_process.hpp"

namespace knit_test {
namespace {

// The service manager's end: a datagram socket bound to a path in a fresh directory.
class notify_socket {
 public:
  notify_socket() {
    char dir_template[] = "/tmp/knit-notify-XXXXXX";
    if (!::mkdtemp(dir_template)) throw std::runtime_error("mkdtemp failed");
    dir_ = dir_template;
    path_ = dir_ + "/notify";
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error("socket(AF_UNIX) failed");
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      throw std::runtime_error(std::string("bind(notify socket): ") + std::strerror(errno));
    }
  }
  ~notify_socket() {
    ::close(fd_);
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  notify_socket(const notify_socket&) = delete;
  notify_socket& operator=(const notify_socket&) = delete;

  const std::string& path() const { return path_; }

  // The next datagram, or nullopt when none comes within `deadline`.
  std::optional<std::string> receive(std::chrono::milliseconds deadline) {
    pollfd p{fd_, POLLIN, 0};
    int ready;
    do {
      ready = ::poll(&p, 1, static_cast<int>(deadline.count()));
    } while (ready < 0 && errno == EINTR);
    if (ready <= 0) return std::nullopt;
    char buffer[4096];
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    if (n < 0) return std::nullopt;
    return std::string(buffer, static_cast<std::size_t>(n));
  }

 private:
  std::string dir_;
  std::string path_;
  int fd_ = -1;
};

// READY=1 first, with the port accepting as it arrives; then STOPPING=1 after SIGTERM, and
// a clean exit. The server's stdout is not read before READY=1: the datagram alone must
// say that the server can be used.
void check_ready_then_stopping(env_map env) {
  if (!knit_server::service_notify_built_in()) {
    GTEST_SKIP() << "knit-server built without libsystemd: it sends no notification";
  }
  notify_socket manager;
  env["NOTIFY_SOCKET"] = manager.path();
  server_process server(env);

  const std::optional<std::string> first = manager.receive(std::chrono::seconds(15));
  ASSERT_TRUE(first.has_value()) << "no notification; stderr: " << server.stderr_text();
  EXPECT_EQ(*first, "READY=1");
  // Ready means listening: a connection made now is accepted and answered. Its port (the
  // kernel's pick, PORT=0) is in "listening on", which the server prints before it notifies:
  // already in the pipe as READY=1 arrives, so reading it waits for nothing.
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  {
    connection c(server.port());
    ASSERT_TRUE(c.connected()) << "READY=1 came before the port accepted";
    const auto pong = c.request("GET", "/ping");
    ASSERT_TRUE(pong.has_value());
    EXPECT_EQ(pong->status, 200);
  }
  // Nothing more while it serves.
  EXPECT_EQ(manager.receive(std::chrono::milliseconds(100)), std::nullopt);

  server.signal(SIGTERM);
  const std::optional<std::string> second = manager.receive(std::chrono::seconds(15));
  ASSERT_TRUE(second.has_value()) << "no STOPPING=1; stderr: " << server.stderr_text();
  EXPECT_EQ(*second, "STOPPING=1");
  EXPECT_EQ(server.wait_exit(), 0) << server.stderr_text();
  EXPECT_EQ(manager.receive(std::chrono::milliseconds(0)), std::nullopt);
}

TEST(server_notify, ReadyOnceListeningThenStoppingOnSigterm) {
  check_ready_then_stopping({{"KNIT_MODE", "pooled"}, {"KNIT_THREADS", "1"}});
}

// KNIT_HOSTS=2: READY=1 only once every host listens (main prints "listening on" then).
TEST(server_notify, ReadyOnceEveryHostListensWithTwoEventLoops) {
  check_ready_then_stopping({{"KNIT_MODE", "inline"}, {"KNIT_HOSTS", "2"}});
}

// A NOTIFY_SOCKET nobody listens on (no such path) changes nothing: the server serves and
// stops as without it.
TEST(server_notify, AbsentManagerChangesNothing) {
  server_process server(env_map{{"NOTIFY_SOCKET", "/nonexistent/knit-notify-test/notify"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection c(server.port());
  const auto pong = c.request("GET", "/ping");
  ASSERT_TRUE(pong.has_value());
  EXPECT_EQ(pong->status, 200);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

}  // namespace
}  // namespace knit_test

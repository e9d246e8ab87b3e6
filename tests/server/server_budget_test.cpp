// End-to-end tests of the write budget (KNIT_MEMORY_BUDGET_MB, write_budget.hpp) with the real
// server: clients that ask for the largest /ssr page and never read it fill a small budget,
// further /ssr and /jwt get 503 + Retry-After while /ping still gets 200, and once the stalled
// writes end (the clients go, or the write deadline cuts them with a reset) /ssr works again.
//
// No test asserts on timing: each waits on a condition (a knit-stats figure, the reset
// arriving), with a bound that only stops a broken server from hanging the suite.
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
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

// The largest page: a 64 KiB name of apostrophes renders as 787,387 bytes.
const std::string kLargestPageBody = R"({"name":")" + std::string(64 * 1024 - 12, '\'') + R"("})";

// 2 MiB of budget and a 32 KiB send queue per connection (SO_SNDBUF 16 KiB, doubled):
// each stalled largest page counts 787 KB + 32 KiB, so two fit and a third does not.
constexpr int kBudgetMb = 2;
constexpr int kStalledClients = 3;
constexpr int kPagesThatFit = 2;
constexpr std::int64_t kBudgetBytes = std::int64_t{kBudgetMb} * 1024 * 1024;
constexpr std::int64_t kPageBytes = 787'387;
const std::string kPageRequest = make_request("POST", "/ssr", kLargestPageBody);

// A client that sends one request for the largest page and never reads: a raw socket, so
// that nothing reads behind the test's back.
class stalled_reader {
 public:
  // Connects and asks for the largest page; with `request` empty, only connects (a small
  // receive buffer: the window fills after a few KiB).
  explicit stalled_reader(std::uint16_t port, std::string request = {}) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (request.empty()) {
      const int bytes = 4096;
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ADD_FAILURE() << "connect: " << std::strerror(errno);
      return;
    }
    if (request.empty()) return;
    send_all(request);
  }
  ~stalled_reader() {
    if (fd_ >= 0) ::close(fd_);
  }
  stalled_reader(const stalled_reader&) = delete;
  stalled_reader& operator=(const stalled_reader&) = delete;

  void send_all(const std::string& request) {
    std::size_t sent = 0;
    while (sent < request.size()) {
      const ssize_t n = ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) {
        ADD_FAILURE() << "send: " << std::strerror(errno);
        return;
      }
      sent += static_cast<std::size_t>(n);
    }
  }

  // Waits, without reading a byte, until the connection has failed (POLLERR / POLLHUP: the
  // server reset it), and returns the socket's error: ECONNRESET for a reset. A graceful close
  // never shows here, since its FIN waits behind the unread page. -1 at the bound.
  int wait_failed(std::chrono::milliseconds bound) const {
    pollfd p{fd_, 0, 0};  // no events asked for: only POLLERR and POLLHUP wake us
    if (::poll(&p, 1, static_cast<int>(bound.count())) != 1) return -1;
    int error = 0;
    socklen_t size = sizeof error;
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &size);
    return error;
  }

  // Waits until more than `before` bytes wait unread in the socket, without reading them;
  // returns the count then, or `before` when none came within `bound`.
  int wait_unread_above(int before, std::chrono::milliseconds bound) const {
    const auto until = std::chrono::steady_clock::now() + bound;
    for (;;) {
      int unread = 0;
      if (::ioctl(fd_, FIONREAD, &unread) == 0 && unread > before) return unread;
      if (std::chrono::steady_clock::now() >= until) return before;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  // Closes with the page unread: the kernel sends RST, the server's write fails.
  void close_now() {
    ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

std::int64_t parked_bytes(const json::object& stats) { return stats.at("parked_bytes").as_int64(); }

using write_budget_e2e = server_mode_test;

INSTANTIATE_TEST_SUITE_P(modes, write_budget_e2e,
                         ::testing::Values("inline", "pooled", "multi", "inline_h2"),
                         [](const auto& info) { return info.param; });

TEST_P(write_budget_e2e, BannerStatesTheBudgetAndWhatItAdmits) {
  ASSERT_NO_FATAL_FAILURE(start({{"KNIT_MEMORY_BUDGET_MB", "2"}, {"KNIT_SNDBUF_KB", "16"}}));
  const std::string banner = server_->stdout_seen();
  EXPECT_NE(banner.find("memory budget: 2 MB (KNIT_MEMORY_BUDGET_MB)"), std::string::npos)
      << banner;
  EXPECT_NE(banner.find("kernel send queue <= 32 KiB per connection (SO_SNDBUF 16 KiB, "
                        "doubled by Linux)"),
            std::string::npos)
      << banner;
  EXPECT_NE(banner.find("after 2 slow readers of the largest page"), std::string::npos) << banner;
}

TEST_P(write_budget_e2e, StalledReadersShedHeavyRoutesUntilTheirWritesEnd) {
  // The default 30 s write deadline: the stalled writes last until the clients go.
  ASSERT_NO_FATAL_FAILURE(
      start({{"KNIT_MEMORY_BUDGET_MB", std::to_string(kBudgetMb)}, {"KNIT_SNDBUF_KB", "16"}}));
  std::vector<std::unique_ptr<stalled_reader>> stalled;
  for (int i = 0; i < kStalledClients; ++i) {
    stalled.push_back(std::make_unique<stalled_reader>(port(), kPageRequest));
  }
  // Two stalled pages are being written (the third was shed, at admission or, on a pool that
  // took it before the others' pages existed, at its write): no room for another page.
  const json::object full = stats_where(*server_, [](const json::object& s) {
    return parked_bytes(s) >= 2 * kPageBytes && s.at("rejected").at("write_budget").as_int64() >= 1;
  });
  EXPECT_LE(parked_bytes(full), kBudgetBytes) << json::serialize(full);

  connection probe(port());
  for (const char* target : {"/ssr", "/jwt"}) {
    const auto res = probe.request("POST", target, target[1] == 's' ? kSsrBody : kJwtBody);
    ASSERT_NO_FATAL_FAILURE(expect_status(res, 503, target));
    EXPECT_EQ(res->header("retry-after"), "1") << target;
    EXPECT_EQ(res->body, "Service Unavailable") << target;  // the admission refusal's bytes
  }
  ASSERT_NO_FATAL_FAILURE(expect_status(probe.request("GET", "/ping"), 200, "/ping"));
  const json::object counted = stats_where(*server_, [](const json::object& s) {
    return s.at("rejected").at("write_budget").as_int64() >= 3;
  });
  EXPECT_EQ(counted.at("rejected").at("write_budget").as_int64(), 3) << json::serialize(counted);
  EXPECT_LE(parked_bytes(counted), kBudgetBytes) << json::serialize(counted);

  // The clients go without reading: their resets fail the writes, which give the bytes back.
  for (auto& s : stalled) s->close_now();
  stats_where(*server_, [](const json::object& s) { return parked_bytes(s) == 0; });
  const auto res = probe.request("POST", "/ssr", kLargestPageBody);
  ASSERT_NO_FATAL_FAILURE(expect_status(res, 200, "/ssr after the stalled clients left"));
  EXPECT_GT(res->body.size(), 780'000u);
}

TEST_P(write_budget_e2e, AStalledWriteIsCutByItsDeadlineWithAReset) {
  ASSERT_NO_FATAL_FAILURE(start({{"KNIT_MEMORY_BUDGET_MB", std::to_string(kBudgetMb)},
                                 {"KNIT_SNDBUF_KB", "16"},
                                 {"KNIT_IDLE_TIMEOUT_MS", "300"}}));
  std::vector<std::unique_ptr<stalled_reader>> stalled;
  // As many as fit: each gets its page, and each page's write stalls.
  for (int i = 0; i < kPagesThatFit; ++i) {
    stalled.push_back(std::make_unique<stalled_reader>(port(), kPageRequest));
  }
  // Each stalled write passes its 300 ms deadline and is reset: the kernel drops the unsent
  // page at once (a graceful close would queue the FIN behind it, and nothing would arrive).
  for (auto& s : stalled) EXPECT_EQ(s->wait_failed(std::chrono::seconds(20)), ECONNRESET);
  const json::object after = stats_where(*server_, [](const json::object& s) {
    return parked_bytes(s) == 0 && s.at("connections").as_int64() == 0;
  });
  EXPECT_EQ(parked_bytes(after), 0) << json::serialize(after);
  // The budget is free again: the heavy routes answer.
  connection probe(port());
  ASSERT_NO_FATAL_FAILURE(expect_status(probe.request("POST", "/ssr", kSsrBody), 200, "/ssr"));
  ASSERT_NO_FATAL_FAILURE(expect_status(probe.request("POST", "/jwt", kJwtBody), 200, "/jwt"));
}

// A client that asks for one small response at a time, each once the last has arrived, and
// reads none: each response leaves with the next head's receive (KNIT_IO=uring: the ring's
// pair, session.hpp) until the client's window is full and a send waits in the kernel. The
// deadline then resets the connection, and nothing of it stays.
TEST_P(write_budget_e2e, SmallResponsesNobodyReadsAreCutByTheirDeadlineWithAReset) {
  ASSERT_NO_FATAL_FAILURE(start({{"KNIT_SNDBUF_KB", "16"}, {"KNIT_IDLE_TIMEOUT_MS", "300"}}));
  stalled_reader client(port());
  const std::string ping = make_request("GET", "/ping");
  int unread = 0;
  int answered = 0;
  for (; answered < 100'000; ++answered) {
    client.send_all(ping);
    const int now = client.wait_unread_above(unread, std::chrono::seconds(2));
    if (now == unread) break;  // this response did not arrive: its send waits
    unread = now;
  }
  EXPECT_GT(answered, 10);  // a 4 KiB window and a 32 KiB send queue take many /ping answers
  EXPECT_EQ(client.wait_failed(std::chrono::seconds(20)), ECONNRESET);
  const json::object after = stats_where(*server_, [](const json::object& s) {
    return parked_bytes(s) == 0 && s.at("connections").as_int64() == 0;
  });
  EXPECT_EQ(after.at("connections").as_int64(), 0) << json::serialize(after);
}

}  // namespace
}  // namespace knit_test

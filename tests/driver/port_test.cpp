// The port-free check refuses ports in use, whether listening or merely bound.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "driver/system/port.hpp"

namespace knit::bench {
namespace {

// A socket bound to 127.0.0.1 on an ephemeral port, optionally listening.
struct bound_socket {
  int fd = -1;
  int port = 0;
  explicit bound_socket(bool listening) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    if (listening) {
      EXPECT_EQ(::listen(fd, 4), 0);
    }
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~bound_socket() { ::close(fd); }
};

TEST(port, ListeningPortIsNotFree) {
  bound_socket s(true);
  std::string why;
  EXPECT_FALSE(port_is_free("127.0.0.1", s.port, &why));
  EXPECT_NE(why.find("listening"), std::string::npos) << why;
  // The LISTEN table names our socket's inode.
  struct stat st {};
  ASSERT_EQ(::fstat(s.fd, &st), 0);
  auto inodes = listening_inodes(s.port);
  EXPECT_NE(std::find(inodes.begin(), inodes.end(), st.st_ino), inodes.end());
  EXPECT_TRUE(tcp_connect_ok("127.0.0.1", s.port, 500));
}

TEST(port, BoundButNotListeningIsNotFree) {
  bound_socket s(false);
  std::string why;
  EXPECT_FALSE(port_is_free("127.0.0.1", s.port, &why));
  EXPECT_NE(why.find("cannot bind"), std::string::npos) << why;
}

TEST(port, FreePortIsFree) {
  int port = pick_free_port();
  std::string why = "unchanged";
  EXPECT_TRUE(port_is_free("127.0.0.1", port, &why)) << why;
  EXPECT_TRUE(why.empty());
  EXPECT_TRUE(listening_inodes(port).empty());
  EXPECT_FALSE(tcp_connect_ok("127.0.0.1", port, 200));
}

}  // namespace
}  // namespace knit::bench

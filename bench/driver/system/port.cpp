// TCP port checks: is a port free, who listens on it (by socket inode), can we connect.
#include "driver/system/port.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace knit::bench {
namespace {

// Resolves host (numeric or name) to the first IPv4/IPv6 address.
bool resolve(const std::string& host, int port, sockaddr_storage& out, socklen_t& len) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res)
    return false;
  std::memcpy(&out, res->ai_addr, res->ai_addrlen);
  len = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

struct unique_fd {
  int fd = -1;
  explicit unique_fd(int f) : fd(f) {}
  ~unique_fd() {
    if (fd >= 0) ::close(fd);
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
};

void scan_table(const char* path, int port, std::vector<unsigned long>& out) {
  std::ifstream in(path);
  if (!in) return;  // no IPv6 on this host, say
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string slot, local, remote, state, queues, timer, retr, uid, timeout, inode;
    ls >> slot >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
    if (state != "0A") continue;  // 0A = TCP_LISTEN
    auto colon = local.rfind(':');
    if (colon == std::string::npos) continue;
    if (std::stoi(local.substr(colon + 1), nullptr, 16) != port) continue;
    out.push_back(std::stoul(inode));
  }
}

}  // namespace

std::vector<unsigned long> listening_inodes(int port) {
  std::vector<unsigned long> inodes;
  scan_table("/proc/net/tcp", port, inodes);
  scan_table("/proc/net/tcp6", port, inodes);
  return inodes;
}

bool port_is_free(const std::string& host, int port, std::string* why) {
  auto say = [&](const std::string& s) {
    if (why) *why = s;
    return false;
  };
  // A listener on any address (0.0.0.0, ::, another interface) would take or split
  // our traffic, so check the kernel's LISTEN table, not just our own bind.
  auto inodes = listening_inodes(port);
  if (!inodes.empty())
    return say("port " + std::to_string(port) + " already has a listening socket (inode " +
               std::to_string(inodes.front()) + ")");
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (!resolve(host, port, addr, len)) return say("cannot resolve host " + host);
  unique_fd s(::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s.fd < 0) return say(std::string("socket(): ") + std::strerror(errno));
  // SO_REUSEADDR so that connections in TIME_WAIT from the last case do not count
  // as "in use"; the server sets it too, so it would bind fine.
  int one = 1;
  ::setsockopt(s.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(s.fd, reinterpret_cast<sockaddr*>(&addr), len) != 0)
    return say("cannot bind " + host + ":" + std::to_string(port) + ": " + std::strerror(errno));
  if (why) why->clear();
  return true;
}

bool tcp_connect_ok(const std::string& host, int port, int timeout_ms) {
  sockaddr_storage addr{};
  socklen_t len = 0;
  if (!resolve(host, port, addr, len)) return false;
  unique_fd s(::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (s.fd < 0) return false;
  if (::connect(s.fd, reinterpret_cast<sockaddr*>(&addr), len) == 0) return true;
  if (errno != EINPROGRESS) return false;
  pollfd p{s.fd, POLLOUT, 0};
  if (::poll(&p, 1, timeout_ms) != 1) return false;
  int err = 0;
  socklen_t elen = sizeof err;
  ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &elen);
  return err == 0;
}

int pick_free_port() {
  unique_fd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s.fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (::bind(s.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw std::runtime_error("bind() failed");
  socklen_t len = sizeof a;
  ::getsockname(s.fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

}  // namespace knit::bench

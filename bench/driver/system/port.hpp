// TCP port checks: is a port free, who listens on it (by socket inode), can we connect.
#pragma once

#include <string>
#include <vector>

namespace knit::bench {

// True when nothing listens on `port` and we can bind host:port ourselves. On false,
// `why` says what holds it. A stale server on the port is the failure the reference benchmark's
// harness measured for six configurations; this is the first line against it.
bool port_is_free(const std::string& host, int port, std::string* why = nullptr);

// Socket inodes in LISTEN state on `port`, from /proc/net/tcp and /proc/net/tcp6.
std::vector<unsigned long> listening_inodes(int port);

// One TCP connect to host:port within timeout_ms.
bool tcp_connect_ok(const std::string& host, int port, int timeout_ms);

// An ephemeral port that was free a moment ago (for tests and fakes).
int pick_free_port();

}  // namespace knit::bench

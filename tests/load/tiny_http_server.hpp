// A tiny single-threaded epoll HTTP/1.1 server for knit-load's tests and wrk comparisons.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace knit_load_test {

// Answers on 127.0.0.1 from its own thread until destroyed. Routes:
//   /chunked      200 with a chunked body (three chunks)
//   /status/NNN   status NNN with a short body
//   /close        200 with "connection: close", then closes
//   /hang         reads the request and never answers
//   anything else 200 "Hello, World!" (content-length)
// Pipelined requests are answered in order; request bodies (content-length) are skipped.
class tiny_http_server {
 public:
  // port 0 picks a free ephemeral port. Throws std::system_error on socket failures.
  explicit tiny_http_server(std::uint16_t port = 0);
  ~tiny_http_server();
  tiny_http_server(const tiny_http_server&) = delete;
  tiny_http_server& operator=(const tiny_http_server&) = delete;

  std::uint16_t port() const { return port_; }
  std::uint64_t requests_served() const { return served_.load(); }

 private:
  void loop();

  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int stop_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<std::uint64_t> served_{0};
  std::thread thread_;
};

}  // namespace knit_load_test

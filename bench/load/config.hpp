// What a knit-load run was asked to do: the target, the run length, and the routes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace knit_load {

struct route_spec {
  std::string name;
  std::string method;
  std::string path;
  std::uint32_t connections = 1;
  // Requests per second for the whole route (open loop); 0 means closed loop.
  double rate = 0.0;
  std::string body_file;  // empty: no body
  std::string body;       // the bytes of body_file
  bool open_loop() const { return rate > 0.0; }
};

struct load_config {
  std::string host = "127.0.0.1";
  std::uint16_t port = 3000;
  double duration_s = 10.0;
  std::uint32_t threads = 1;
  std::string json_path;  // empty: human summary only; "-": JSON on stdout
  std::uint32_t timeout_ms = 10000;
  std::vector<route_spec> routes;
};

}  // namespace knit_load

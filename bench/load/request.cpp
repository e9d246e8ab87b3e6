// Builds the request bytes for a route.
#include "request.hpp"

namespace knit_load {

std::string build_request(const route_spec& route, const std::string& host, std::uint16_t port) {
  // An IPv6 literal needs brackets in the Host header.
  const bool v6 = host.find(':') != std::string::npos;
  std::string req;
  req.reserve(128 + route.body.size());
  req += route.method;
  req += ' ';
  req += route.path;
  req += " HTTP/1.1\r\nHost: ";
  req += v6 ? "[" + host + "]" : host;
  req += ':';
  req += std::to_string(port);
  req += "\r\n";
  if (!route.body_file.empty()) {
    req += "content-type: application/json\r\ncontent-length: ";
    req += std::to_string(route.body.size());
    req += "\r\n";
  }
  req += "\r\n";
  req += route.body;
  return req;
}

}  // namespace knit_load

// The bytes of one route's request, built once and resent on every connection.
#pragma once

#include <cstdint>
#include <string>

#include "config.hpp"

namespace knit_load {

// "METHOD PATH HTTP/1.1\r\nHost: H:P\r\n[content-type + content-length]\r\n\r\nbody".
// Keep-alive is HTTP/1.1's default, so no Connection header is sent.
std::string build_request(const route_spec& route, const std::string& host, std::uint16_t port);

}  // namespace knit_load

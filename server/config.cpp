// The spellings of the modes and of the isolation kinds.
#include "config.hpp"

namespace knit_server {

std::string_view to_string(exec_mode mode) noexcept {
  switch (mode) {
    case exec_mode::inline_host: return "inline";
    case exec_mode::pooled: return "pooled";
    case exec_mode::asio_pool: return "asio";
    case exec_mode::multi_thread: return "multi";
    case exec_mode::auto_offload: return "auto";
  }
  return "?";
}

std::string_view to_string(io_backend io) noexcept {
  switch (io) {
    case io_backend::auto_pick: return "auto";
    case io_backend::uring: return "uring";
    case io_backend::epoll: return "epoll";
  }
  return "?";
}

std::string_view to_string(isolation i) noexcept {
  return i == isolation::process ? "process" : "thread";
}

}  // namespace knit_server

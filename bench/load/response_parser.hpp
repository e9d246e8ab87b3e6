// Incremental HTTP/1.1 response parser: status line, headers, content-length/chunked/close bodies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace knit_load {

// Fed raw bytes in whatever pieces the socket delivers. Bodies are counted, never stored
// (the generator only needs the status and where the response ends), so memory stays
// bounded by the header size limit whatever the server sends.
class response_parser {
 public:
  enum class feed_result { kNeedMore, kComplete, kError };

  static constexpr std::size_t kMaxHeadBytes = 64 * 1024;
  static constexpr std::size_t kMaxLineBytes = 4 * 1024;

  // Prepares for the next response. A response to HEAD has no body whatever its headers say.
  void reset(bool head_request = false);

  // Consumes bytes of the current response from data[0, len). Sets `consumed` to how many
  // were used: on kComplete any bytes after `consumed` belong to whatever follows.
  feed_result feed(const char* data, std::size_t len, std::size_t& consumed);
  feed_result feed(std::string_view data, std::size_t& consumed) {
    return feed(data.data(), data.size(), consumed);
  }

  // The peer closed the connection. Completes a body delimited by the close; any other
  // partially received response is an error.
  feed_result finish_eof();

  // True once any byte of the current response has arrived.
  bool started() const { return started_; }
  bool done() const { return state_ == parse_state::kDone; }
  int status() const { return status_; }
  // Whether the connection may carry another request after this response.
  bool keep_alive() const { return keep_alive_; }
  std::uint64_t body_bytes() const { return body_bytes_; }
  const std::string& error() const { return error_; }

 private:
  enum class parse_state {
    kHead,
    kBodyLength,
    kBodyUntilClose,
    kChunkSize,
    kChunkData,
    kChunkDataEnd,
    kTrailer,
    kDone,
    kError,
  };

  feed_result fail(std::string why);
  // Parses the status line and headers (without the blank line) and picks the body state.
  feed_result parse_head(std::string_view head);
  // Extracts the next LF-terminated line (CR stripped) into `line`, buffering a partial one.
  // Returns false when more input is needed; `line` may point into line_buf_.
  bool next_line(const char*& p, const char* end, std::string_view& line);

  parse_state state_ = parse_state::kHead;
  bool head_request_ = false;
  bool started_ = false;
  int status_ = 0;
  bool keep_alive_ = true;
  std::uint64_t remaining_ = 0;
  std::uint64_t body_bytes_ = 0;
  std::string head_buf_;
  std::string line_buf_;
  std::string error_;
};

}  // namespace knit_load

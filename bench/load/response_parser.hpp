// Incremental HTTP/1.1 response parser (RFC 9112) on Beast's basic_parser: status line,
// headers, content-length/chunked/close bodies, 1xx interim responses skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/http/basic_parser.hpp>

namespace knit_load {

namespace detail {

// Beast's parser with callbacks that only count: the status and the body bytes.
class counting_parser final : public boost::beast::http::basic_parser<false> {
 public:
  int status = 0;
  std::uint64_t body_bytes = 0;
  // Inside a chunk's data (between a chunk-size line and the CRLF after the data).
  bool in_chunk_data = false;

 private:
  using error_code = boost::beast::error_code;
  using string_view = boost::beast::string_view;
  void on_request_impl(boost::beast::http::verb, string_view, string_view, int,
                       error_code&) override {}
  void on_response_impl(int code, string_view, int, error_code&) override { status = code; }
  void on_field_impl(boost::beast::http::field, string_view, string_view, error_code&) override {}
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
  std::size_t on_body_impl(string_view body, error_code&) override {
    body_bytes += body.size();
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t size, string_view, error_code&) override {
    in_chunk_data = size > 0;
  }
  std::size_t on_chunk_body_impl(std::uint64_t remain, string_view body, error_code&) override {
    body_bytes += body.size();
    if (remain == body.size()) in_chunk_data = false;
    return body.size();
  }
  void on_finish_impl(error_code&) override {}
};

}  // namespace detail

// Fed raw bytes in whatever pieces the socket delivers. Bodies are counted, never stored
// (the generator only needs the status and where the response ends), so memory stays
// bounded by the limits below whatever the server sends.
//
// Beast parses one element (the head, a chunk-size line, a piece of body) at a time and
// needs the whole of a head or chunk line in one buffer: a part of one that ends a read is
// kept here until the rest arrives. Beast is shown a head only when it is whole, and never
// more than a chunk line's limit, so every answer (a limit, an error) is the same however
// the reads split the bytes (fuzz_response_parser).
class response_parser {
 public:
  enum class feed_result { kNeedMore, kComplete, kError };

  // The head: status line and header fields, with the blank line ending them.
  static constexpr std::size_t kMaxHeadBytes = 64 * 1024;
  // A chunk-size line with its CRLF and the CRLF ending the chunk before it; also the
  // last chunk's line with the trailer fields after it.
  static constexpr std::size_t kMaxLineBytes = 4 * 1024;

  response_parser() { reset(); }

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
  int status() const { return parser_ ? parser_->status : 0; }
  // Whether the connection may carry another request after this response.
  bool keep_alive() const { return keep_alive_; }
  std::uint64_t body_bytes() const { return parser_ ? parser_->body_bytes : 0; }
  const std::string& error() const { return error_; }

 private:
  enum class parse_state { kParsing, kDone, kError };

  feed_result fail(std::string why);
  // A fresh Beast parser for the next message (the response, or the one after a 1xx).
  void start_message();
  // The most Beast may be shown at once after the head: the limit of the element it is in.
  std::size_t element_limit() const;
  // Parses from in[used, ...) until the message is done, Beast needs more, or an error.
  feed_result parse(std::string_view in, std::size_t& used);

  std::optional<detail::counting_parser> parser_;
  parse_state state_ = parse_state::kParsing;
  bool head_request_ = false;
  bool started_ = false;
  bool keep_alive_ = true;
  std::size_t head_scanned_ = 0;  // where to resume looking for the end of the head
  std::string pending_;           // the start of an element a read ended inside
  std::string error_;
};

}  // namespace knit_load

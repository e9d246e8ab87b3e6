// The session's request parser: Beast's request_parser with a cap on how many header and trailer
// fields one request may carry, no trailer field that belongs in the header, and no control
// character in a chunk extension.
#pragma once

#include <cstddef>
#include <cstdint>

#include <boost/beast/core/error.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "config.hpp"
#include "http/request_arena.hpp"

namespace knit_server {

// Why a count: the header limit (8 KiB) bounds the bytes of a header, not what Beast stores
// for it. Each field becomes a list-and-set node of about 80 bytes plus its name and value,
// so 8 KiB of "a:\r\n" lines (2,033 empty fields) took 163 KB of heap: 20 times the limit.
// With at most kFieldLimit fields the stored header is at most
// kHeaderLimit + kFieldLimit x 80 bytes (about 18 KiB). Trailer fields (after a chunked
// body) are stored the same way and count towards the same cap.
//
// A request over the cap fails with http::error::header_limit: the session answers 431.
class request_parser : public boost::beast::http::request_parser<boost::beast::http::string_body,
                                                                 arena_allocator<char>> {
  using base =
      boost::beast::http::request_parser<boost::beast::http::string_body, arena_allocator<char>>;

 public:
  using base::base;

 private:
  // Called by basic_parser for every header and trailer field; replaces the base's, which
  // only inserts.
  void on_field_impl(boost::beast::http::field name, boost::beast::string_view name_string,
                     boost::beast::string_view value, boost::beast::error_code& ec) override {
    if (++fields_ > server_config::kFieldLimit) {
      ec = boost::beast::http::error::header_limit;
      return;
    }
    // A trailer (after a chunked body) must not carry what frames, routes or ends the
    // message (RFC 9110 6.5.1): Beast would merge it into the header's fields, where a
    // trailer Host is a second Host after the session's check and a trailer Connection:
    // close (or Proxy-Connection: close) changes keep-alive after the fact. 400, like any
    // bad field. (Beast itself refuses a trailer Content-Length or Transfer-Encoding.)
    if (is_header_done() && is_header_only(name)) {
      ec = boost::beast::http::error::bad_field;
      return;
    }
    get().insert(name, name_string, value);
  }

  // Called for every chunk-size line with its chunk extensions, raw. Beast checks their
  // grammar but takes any byte inside a quoted value; RFC 9110 5.6.4's qdtext has no control
  // character but HTAB. Nothing else is done with extensions (no callback is set).
  void on_chunk_header_impl(std::uint64_t /*size*/, boost::beast::string_view extensions,
                            boost::beast::error_code& ec) override {
    for (const char c : extensions) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && u != '\t') || u == 0x7f) {
        ec = boost::beast::http::error::bad_chunk_extension;
        return;
      }
    }
  }

  static bool is_header_only(boost::beast::http::field name) noexcept {
    using boost::beast::http::field;
    // Proxy-Connection too: Beast reads it as Connection (docs/server-safety.md).
    return name == field::host || name == field::connection || name == field::proxy_connection ||
           name == field::content_length || name == field::transfer_encoding ||
           name == field::keep_alive || name == field::upgrade || name == field::trailer ||
           name == field::te;
  }

  std::size_t fields_ = 0;
};

}  // namespace knit_server

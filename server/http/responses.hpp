// Responses as the session writes them: status, content type and body, serialized from pre-built
// header chunks.
#pragma once

#include <chrono>
#include <cstddef>
#include <ostream>  // Boost 1.81's status.hpp uses operator<< on string_view without including it
#include <string>
#include <string_view>

#include <boost/beast/http/status.hpp>

namespace knit_server {

// The exact Content-Type values the reference Hono server sends.
namespace content_type {
inline constexpr std::string_view json = "application/json";  // c.json (/ping)
// /jwt: set by hand in the reference route, for its 200 and its 400 alike.
inline constexpr std::string_view json_utf8 = "application/json; charset=utf-8";
inline constexpr std::string_view html = "text/html; charset=UTF-8";  // c.html (/ssr)
// c.text and Hono's notFound.
inline constexpr std::string_view text = "text/plain; charset=UTF-8";
// GET /metrics: the Prometheus text exposition format, version 0.0.4.
inline constexpr std::string_view prometheus = "text/plain; version=0.0.4; charset=utf-8";
// GET /plaintext: what TechEmpower's plaintext test expects, as nginx's default_type sends it.
inline constexpr std::string_view plain = "text/plain";
}  // namespace content_type

// One response. The session keeps one and reuses it; a route's body string is moved in.
//
// Why not Beast's http::response + http::async_write: the serializer walks the fields through
// layers of buffer-sequence adaptors and allocates a node per field, and on /ping that was
// most of the host thread's user-space time. A response here has at most four fixed header
// lines (and /plaintext's Server and Date), so appending them to a reused string is all the
// serialization it needs.
struct response {
  boost::beast::http::status status = boost::beast::http::status::ok;
  std::string_view type = content_type::text;  // one of content_type::*
  std::string body;
  bool retry_after = false;  // adds "Retry-After: 1" (503 only)
  // Whole header lines, each ending in \r\n, written after the others: /plaintext's Server and
  // Date. Assigned, never reallocated once grown; every fill* clears it.
  std::string extra_headers;
};

// A route answer with the given type; `body` is moved in, never copied.
void fill(response& res, boost::beast::http::status status, std::string_view type,
          std::string&& body);

// The same with a body copied into the response's existing string: no allocation once the
// string has grown to the size of the bodies it carries. For short bodies built elsewhere.
void fill_copy(response& res, boost::beast::http::status status, std::string_view type,
               std::string_view body);

// GET /plaintext, TechEmpower's plaintext test: 200, "Hello, World!" as text/plain, with the
// Server and Date headers the test requires (Date rendered once a second: http_date.hpp).
void fill_plaintext(response& res, std::chrono::system_clock::time_point now);

// Hono's default notFound: 404, text/plain, "404 Not Found".
void fill_not_found(response& res);

// A refusal the server decides itself (400 malformed, 413, 431, 500): text/plain with the
// reason phrase as the body.
void fill_error(response& res, boost::beast::http::status status);

// The pool is full (knit::errc::queue_full): 503 with Retry-After: 1, so a client backs off
// for a second instead of retrying at once into the same full queue.
void fill_overloaded(response& res);

// How the connection continues after this response.
enum class connection_header {
  none,        // HTTP/1.1 keep-alive: the default, no header needed
  keep_alive,  // HTTP/1.0 client that asked for keep-alive: must be confirmed
  close,       // the server closes after this response
};

// Writes the status line and headers of `res` into `out` (cleared first; its capacity is
// kept, so a reused string allocates nothing). Content-Length is the body's size: a HEAD
// response passes the same `res` and simply does not send the body.
//   HTTP/1.1 200 OK\r\n
//   Content-Type: application/json\r\n
//   Content-Length: 72\r\n
//   [Retry-After: 1\r\n] [extra_headers] [Connection: close | keep-alive\r\n]
//   \r\n
void serialize_head(std::string& out, const response& res, connection_header connection);

}  // namespace knit_server

// Builds the fixed responses and serializes a response head with plain appends.
#include "http/responses.hpp"

#include <charconv>

#include "http/http_date.hpp"

namespace knit_server {

namespace http = boost::beast::http;

void fill(response& res, http::status status, std::string_view type, std::string&& body) {
  res.status = status;
  res.type = type;
  res.body = std::move(body);
  res.retry_after = false;    // set by fill_overloaded only; a reused response must not keep it
  res.extra_headers.clear();  // set by fill_plaintext only, likewise
}

void fill_copy(response& res, http::status status, std::string_view type, std::string_view body) {
  res.status = status;
  res.type = type;
  res.body.assign(body.data(), body.size());
  res.retry_after = false;
  res.extra_headers.clear();
}

void fill_plaintext(response& res, std::chrono::system_clock::time_point now) {
  fill_copy(res, http::status::ok, content_type::plain, "Hello, World!");
  res.extra_headers.assign(server_and_date_headers(now));
}

void fill_not_found(response& res) {
  fill_copy(res, http::status::not_found, content_type::text, "404 Not Found");
}

void fill_error(response& res, http::status status) {
  const auto reason = http::obsolete_reason(status);
  fill_copy(res, status, content_type::text, std::string_view(reason.data(), reason.size()));
}

void fill_overloaded(response& res) {
  fill_error(res, http::status::service_unavailable);
  res.retry_after = true;
}

void serialize_head(std::string& out, const response& res, connection_header connection) {
  // Always answer as HTTP/1.1: a server sends its own version, and a 1.0 client reads it
  // (RFC 9110 section 6.2). Keep-alive for 1.0 is then confirmed explicitly below.
  const unsigned code = static_cast<unsigned>(res.status);
  char digits[20];

  out.clear();
  out += "HTTP/1.1 ";
  out.append(digits, std::to_chars(digits, digits + sizeof digits, code).ptr);
  out += ' ';
  out += std::string_view(http::obsolete_reason(res.status));
  out += "\r\nContent-Type: ";
  out += res.type;
  out += "\r\nContent-Length: ";
  out.append(digits, std::to_chars(digits, digits + sizeof digits, res.body.size()).ptr);
  out += "\r\n";
  if (res.retry_after) out += "Retry-After: 1\r\n";
  out += res.extra_headers;
  if (connection == connection_header::close) out += "Connection: close\r\n";
  if (connection == connection_header::keep_alive) out += "Connection: keep-alive\r\n";
  out += "\r\n";
}

}  // namespace knit_server

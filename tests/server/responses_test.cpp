// responses.hpp: Hono's content types and the serialized response head.
#include "http/responses.hpp"  // first: the header must be self-contained

#include <gtest/gtest.h>

namespace knit_server {
namespace {

namespace http = boost::beast::http;

TEST(responses, head_for_keep_alive) {
  response res;
  fill(res, http::status::ok, content_type::json, std::string(R"({"ok":true})"));
  std::string head;
  serialize_head(head, res, connection_header::none);
  EXPECT_EQ(head,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n");
}

TEST(responses, not_found_and_close) {
  response res;
  fill_not_found(res);
  std::string head;
  serialize_head(head, res, connection_header::close);
  EXPECT_EQ(head,
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=UTF-8\r\n"
            "Content-Length: 13\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(res.body, "404 Not Found");
}

TEST(responses, overloaded_carries_retry_after_only_once) {
  response res;
  fill_overloaded(res);
  std::string head;
  serialize_head(head, res, connection_header::keep_alive);
  EXPECT_EQ(head,
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=UTF-8\r\n"
            "Content-Length: 19\r\nRetry-After: 1\r\nConnection: keep-alive\r\n\r\n");
  // Reusing the response for the next answer must drop the Retry-After.
  fill(res, http::status::ok, content_type::html, std::string("<p>"));
  serialize_head(head, res, connection_header::none);
  EXPECT_EQ(head.find("Retry-After"), std::string::npos);
}

TEST(responses, error_bodies_are_the_reason_phrase) {
  response res;
  fill_error(res, http::status::payload_too_large);
  EXPECT_EQ(res.status, http::status::payload_too_large);
  EXPECT_EQ(res.body, "Payload Too Large");
  EXPECT_EQ(res.type, content_type::text);
}

}  // namespace
}  // namespace knit_server

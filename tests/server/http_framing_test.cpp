// request_head_reader (server/http/http_framing.hpp): RFC 9112 framing on a head's raw bytes,
// whole and byte by byte.
#include "http/http_framing.hpp"

#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace knit_server {
namespace {

using namespace std::string_view_literals;

constexpr std::size_t kLimit = 8 * 1024;

// The verdict on `head` given whole.
head_verdict whole(std::string_view head) {
  request_head_reader r(kLimit);
  return r.feed(head);
}

// The verdict on `head` given one more byte at a time: it must be the same as whole.
head_verdict dribbled(std::string_view head) {
  request_head_reader r(kLimit);
  head_verdict v = head_verdict::need_more;
  for (std::size_t n = 1; n <= head.size() && v == head_verdict::need_more; ++n) {
    v = r.feed(head.substr(0, n));
  }
  return v;
}

void expect_verdict(std::string_view head, head_verdict expected) {
  EXPECT_EQ(whole(head), expected) << head;
  EXPECT_EQ(dribbled(head), expected) << head;
}

TEST(http_framing, APlainHeadIsComplete) {
  const std::string head = "GET /ping HTTP/1.1\r\nHost: x\r\n\r\n";
  request_head_reader r(kLimit);
  EXPECT_EQ(r.feed(head + "GET /next"), head_verdict::complete);
  EXPECT_EQ(r.head_end(), head.size());
  EXPECT_EQ(r.skip(), 0u);
  expect_verdict(head, head_verdict::complete);
  expect_verdict("POST /ssr HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
                 head_verdict::complete);
  expect_verdict("POST /ssr HTTP/1.1\r\nHost: x\r\nContent-Length: 003\r\n\r\n",
                 head_verdict::complete);
  expect_verdict("GET / HTTP/1.0\r\n\r\n", head_verdict::complete);
}

TEST(http_framing, AHeadNotYetEndedNeedsMore) {
  EXPECT_EQ(whole(""), head_verdict::need_more);
  EXPECT_EQ(whole("\r"), head_verdict::need_more);
  EXPECT_EQ(whole("\r\n"), head_verdict::need_more);
  EXPECT_EQ(whole("GET / HTTP/1.1\r\nHost: x\r\n"), head_verdict::need_more);
  EXPECT_EQ(whole("GET / HTTP/1.1\r\nHost: x\r\n\r"), head_verdict::need_more);
}

TEST(http_framing, AFewEmptyLinesBeforeTheRequestAreSkipped) {
  request_head_reader r(kLimit);
  EXPECT_EQ(r.feed("\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n"), head_verdict::complete);
  EXPECT_EQ(r.skip(), 4u);
  std::string head;
  for (std::size_t i = 0; i < request_head_reader::kMaxEmptyLines; ++i) head += "\r\n";
  expect_verdict(head + "GET / HTTP/1.1\r\nHost: x\r\n\r\n", head_verdict::complete);
  expect_verdict("\r\n" + head + "GET / HTTP/1.1\r\nHost: x\r\n\r\n", head_verdict::bad_request);
  expect_verdict("\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", head_verdict::bad_request);
}

TEST(http_framing, TheRequestLineIsExact) {
  expect_verdict("GET /ping HTTP/1.1 \r\nHost: x\r\n\r\n", head_verdict::bad_request);
  expect_verdict("GET  /ping HTTP/1.1\r\nHost: x\r\n\r\n", head_verdict::bad_request);
  expect_verdict("GET /ping\r\nHost: x\r\n\r\n", head_verdict::bad_request);
  expect_verdict("GET /\xce\xb4 HTTP/1.1\r\nHost: x\r\n\r\n", head_verdict::bad_request);
  expect_verdict("G(T / HTTP/1.1\r\nHost: x\r\n\r\n", head_verdict::bad_request);
  expect_verdict("GET / ICE/1.0\r\nHost: x\r\n\r\n", head_verdict::bad_request);
  expect_verdict("GET / HTTP/1.1\nHost: x\r\n\r\n", head_verdict::bad_request);
}

TEST(http_framing, WhitespaceLedLinesAreRefused) {
  // Before the first field (RFC 9112 2.2) and after one (obs-fold, 5.2).
  expect_verdict("GET / HTTP/1.1\r\n Host: x\r\n\r\n", head_verdict::bad_request);
  expect_verdict("GET / HTTP/1.1\r\n\tHost: x\r\n\r\n", head_verdict::bad_request);
  expect_verdict("POST / HTTP/1.1\r\nHost: x\r\nFoo: bar\r\n Content-Length: 5\r\n\r\nhello",
                 head_verdict::bad_request);
  request_head_reader r(kLimit);
  r.feed("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n");
  EXPECT_NE(r.reason().find("obs-fold"), std::string_view::npos) << r.reason();
}

TEST(http_framing, FieldLinesAreTokensAndCleanValues) {
  expect_verdict("GET / HTTP/1.1\r\nHost : x\r\n\r\n", head_verdict::bad_request);
  expect_verdict("GET / HTTP/1.1\r\nHost: x\r\nNo colon\r\n\r\n", head_verdict::bad_request);
  expect_verdict("GET / HTTP/1.1\r\nHost: x\r\nA: b\0c\r\n\r\n"sv, head_verdict::bad_request);
  expect_verdict("GET / HTTP/1.1\r\nHost: x\r\nA: b\x01\r\n\r\n", head_verdict::bad_request);
  expect_verdict("GET / HTTP/1.1\r\nHost: x\r\nA: b\rc\r\n\r\n", head_verdict::bad_request);
  expect_verdict("GET / HTTP/1.1\r\nHost: x\r\nA: tab\there \xff\r\n\r\n", head_verdict::complete);
}

TEST(http_framing, ContentLengthOnceAndDigitsOnly) {
  expect_verdict("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
                 head_verdict::bad_request);
  expect_verdict("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\n",
                 head_verdict::bad_request);
  expect_verdict("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\n",
                 head_verdict::bad_request);
  expect_verdict("POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n",
                 head_verdict::bad_request);
  expect_verdict("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: \t42 \r\n\r\n",
                 head_verdict::complete);
}

TEST(http_framing, TransferEncodingMustEndInOneChunked) {
  const auto te = [](std::string_view fields) {
    return "POST / HTTP/1.1\r\nHost: x\r\n" + std::string(fields) + "\r\n";
  };
  expect_verdict(te("Transfer-Encoding: chunked\r\n"), head_verdict::complete);
  expect_verdict(te("Transfer-Encoding: CHUNKED\r\n"), head_verdict::complete);
  expect_verdict(te("Transfer-Encoding: , chunked,\r\n"), head_verdict::complete);
  for (const char* bad :
       {"pigeons", "identity", "gzip", "chunked, gzip", "chunked, chunked", "chunked;q=1", "",
        "chunked\r\nTransfer-Encoding: gzip", "chunked\r\nTransfer-Encoding: ,"}) {
    expect_verdict(te("Transfer-Encoding: " + std::string(bad) + "\r\n"),
                   head_verdict::bad_request);
  }
  // A coding before the final chunked that the server does not decode: 501.
  expect_verdict(te("Transfer-Encoding: gzip, chunked\r\n"), head_verdict::not_implemented);
  expect_verdict(te("Transfer-Encoding: deflate\r\nTransfer-Encoding: chunked\r\n"),
                 head_verdict::not_implemented);
}

TEST(http_framing, TransferEncodingWithContentLengthIsRefusedInEitherOrder) {
  expect_verdict(
      "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\nContent-Length: 5\r\n\r\n",
      head_verdict::bad_request);
  expect_verdict(
      "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
      head_verdict::bad_request);
  expect_verdict("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
                 head_verdict::bad_request);
}

TEST(http_framing, TheHeaderLimitHolds) {
  std::string head = "GET / HTTP/1.1\r\nHost: x\r\nX: " + std::string(kLimit, 'a');
  EXPECT_EQ(whole(head), head_verdict::too_large);
  EXPECT_EQ(dribbled(head), head_verdict::too_large);
  // Up to the limit exactly, from the request line to the empty line: complete.
  const std::string start = "GET / HTTP/1.1\r\nHost: x\r\nX: ";
  const auto head_of = [&](std::size_t size) {
    return start + std::string(size - start.size() - 4, 'a') + "\r\n\r\n";
  };
  ASSERT_EQ(head_of(kLimit).size(), kLimit);
  expect_verdict(head_of(kLimit), head_verdict::complete);
  expect_verdict("\r\n" + head_of(kLimit), head_verdict::complete);
  expect_verdict(head_of(kLimit + 1), head_verdict::too_large);
}

}  // namespace
}  // namespace knit_server

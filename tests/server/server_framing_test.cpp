// RFC 9112 framing end to end (server/http/http_framing.hpp, docs/server-safety.md "HTTP
// framing"): every head whose message end is in doubt is refused and the connection closed,
// whatever the order of its fields, and a request hidden in its body (a `GET /metrics`
// canary) is never answered. Empty lines before a request are skipped. Over real sockets,
// against knit-server in inline mode (the framing is the session's, the same in every mode).
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "http_client.hpp"
#include "server_fixture.hpp"

namespace knit_test {
namespace {

// A request that, were the refused request's body taken as the next request, would be
// answered with the metrics page.
constexpr std::string_view kCanary = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";

class framing : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<server_process>(env_map{{"KNIT_MODE", "inline"}});
    ASSERT_TRUE(server_->wait_listening()) << server_->stderr_text();
  }
  void TearDown() override {
    if (server_->running()) {
      EXPECT_EQ(server_->stop(), 0) << server_->stderr_text();
    }
  }

  // Sends `raw` followed by the canary, then expects one response with `status` and
  // Connection: close, then the close, and nothing else: the canary is never answered.
  // Nothing is half-closed: the answer must come on the bytes alone.
  void expect_refused(std::string_view raw, int status) {
    connection c(server_->port());
    auto res = c.exchange(std::string(raw) + std::string(kCanary));
    ASSERT_TRUE(res) << raw;
    EXPECT_EQ(res->status, status) << raw;
    EXPECT_EQ(res->header("connection"), "close") << raw;
    std::string after;
    EXPECT_TRUE(c.wait_closed(&after)) << raw;
    EXPECT_EQ(after, "") << "answered after the refusal (the canary?): " << raw;
  }

  std::unique_ptr<server_process> server_;
};

const std::string kHidden = std::string(kCanary);

// A body that is a whole request: the smuggler's payload.
std::string with_hidden_body(std::string_view fields) {
  return "POST /jwt HTTP/1.1\r\nHost: x\r\n" + std::string(fields) + "\r\n" + kHidden;
}

TEST_F(framing, AnUnknownTransferEncodingIs400AndItsBodyIsNeverARequest) {
  for (const char* te : {"pigeons", "gzip", "identity", "chunked, deflate", "chunked;x=1"}) {
    SCOPED_TRACE(te);
    ASSERT_NO_FATAL_FAILURE(
        expect_refused(with_hidden_body("Transfer-Encoding: " + std::string(te) + "\r\n"), 400));
  }
}

TEST_F(framing, ChunkedTwiceOrSplitAcrossFieldsNotFinalIs400) {
  ASSERT_NO_FATAL_FAILURE(expect_refused(
      with_hidden_body("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"), 400));
  ASSERT_NO_FATAL_FAILURE(expect_refused(
      with_hidden_body("Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n"), 400));
}

TEST_F(framing, ACodingBeforeTheFinalChunkedIs501) {
  ASSERT_NO_FATAL_FAILURE(
      expect_refused(with_hidden_body("Transfer-Encoding: gzip, chunked\r\n"), 501));
}

TEST_F(framing, TransferEncodingWithContentLengthIs400InEitherOrder) {
  const std::string cl = "Content-Length: " + std::to_string(kHidden.size()) + "\r\n";
  for (const char* te : {"identity", "chunked", "pigeons"}) {
    SCOPED_TRACE(te);
    const std::string t = "Transfer-Encoding: " + std::string(te) + "\r\n";
    ASSERT_NO_FATAL_FAILURE(expect_refused(with_hidden_body(t + cl), 400));
    ASSERT_NO_FATAL_FAILURE(expect_refused(with_hidden_body(cl + t), 400));
  }
}

TEST_F(framing, TransferEncodingInHttp10Is400) {
  ASSERT_NO_FATAL_FAILURE(
      expect_refused("POST /jwt HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400));
}

TEST_F(framing, AnObsFoldIs400AndTheFoldedLengthIsNeverUsed) {
  // Joined onto Foo, the folded Content-Length would leave the body to be read as a request.
  ASSERT_NO_FATAL_FAILURE(expect_refused(
      with_hidden_body("Foo: bar\r\n Content-Length: " + std::to_string(kHidden.size()) + "\r\n"),
      400));
  ASSERT_NO_FATAL_FAILURE(
      expect_refused("GET /ping HTTP/1.1\r\nHost: x\r\nA: b\r\n\tc\r\n\r\n", 400));
}

TEST_F(framing, WhitespaceBeforeTheFirstFieldIs400) {
  ASSERT_NO_FATAL_FAILURE(expect_refused("GET /ping HTTP/1.1\r\n Host: x\r\n\r\n", 400));
  ASSERT_NO_FATAL_FAILURE(expect_refused("GET /ping HTTP/1.1\r\n\tX: y\r\nHost: x\r\n\r\n", 400));
}

TEST_F(framing, DuplicateContentLengthIs400AtOnce) {
  // Equal values too (llhttp refuses them as well); the head alone decides.
  ASSERT_NO_FATAL_FAILURE(expect_refused(
      "POST /jwt HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", 400));
  ASSERT_NO_FATAL_FAILURE(
      expect_refused("POST /jwt HTTP/1.1\r\nHost: x\r\nContent-Length: 2, 2\r\n\r\n{}", 400));
}

TEST_F(framing, ASpaceAfterTheRequestLineIs400AtOnce) {
  ASSERT_NO_FATAL_FAILURE(expect_refused("GET /ping HTTP/1.1 \r\nHost: x\r\n\r\n", 400));
  ASSERT_NO_FATAL_FAILURE(expect_refused("GET  /ping HTTP/1.1\r\nHost: x\r\n\r\n", 400));
}

TEST_F(framing, AnUnknownMethodIs501ThenClose) {
  ASSERT_NO_FATAL_FAILURE(expect_refused("MKCOLA /ping HTTP/1.1\r\nHost: x\r\n\r\n", 501));
}

TEST_F(framing, EmptyLinesBeforeTheFirstRequestAreIgnored) {
  connection c(server_->port());
  ASSERT_NO_FATAL_FAILURE(
      expect_status(c.exchange("\r\n\r\nGET /ping HTTP/1.1\r\nHost: x\r\n\r\n"), 200));
  // The connection is still good.
  ASSERT_NO_FATAL_FAILURE(expect_status(c.request("GET", "/ping"), 200));
}

TEST_F(framing, EmptyLinesBetweenPipelinedRequestsAreIgnored) {
  // What some clients send after a POST body: a CRLF that is not part of the message.
  connection c(server_->port());
  const std::string post = make_request("POST", "/nope", "{}") + "\r\n";
  ASSERT_TRUE(c.send(post + "\r\n" + make_request("GET", "/ping")));
  http_response first, second;
  ASSERT_EQ(c.read_response(first), read_outcome::complete);
  EXPECT_EQ(first.status, 404);
  ASSERT_EQ(c.read_response(second), read_outcome::complete);
  EXPECT_EQ(second.status, 200);
}

TEST_F(framing, EmptyLinesAreIgnoredOnlyAFewTimes) {
  std::string many;
  for (int i = 0; i < 5; ++i) many += "\r\n";
  ASSERT_NO_FATAL_FAILURE(expect_refused(many + "GET /ping HTTP/1.1\r\nHost: x\r\n\r\n", 400));
}

TEST_F(framing, AnEmptyLineAloneIsNotARequest) {
  // Idle with only CRLF received: no answer, and the server still closes at the client's
  // end of stream.
  connection c(server_->port());
  ASSERT_TRUE(c.send("\r\n"));
  c.shutdown_send();
  ASSERT_NO_FATAL_FAILURE(expect_closed_silently(c));
}

TEST_F(framing, AHeadInPiecesIsJudgedTheSame) {
  // The framing check resumes where it stopped: a head sent a few bytes at a time gets the
  // same answers as one sent whole.
  const std::string good = "\r\nGET /ping HTTP/1.1\r\nHost: x\r\n\r\n";
  connection c(server_->port());
  for (std::size_t at = 0; at < good.size(); at += 3) {
    ASSERT_TRUE(c.send(good.substr(at, 3)));
    // A round trip on another connection lets the server read the piece on its own.
    ASSERT_TRUE(connection(server_->port()).request("GET", "/ping"));
  }
  ASSERT_NO_FATAL_FAILURE(expect_status(c.exchange(""), 200));

  const std::string bad = "POST /jwt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: pigeons\r\n\r\n";
  connection d(server_->port());
  for (std::size_t at = 0; at < bad.size(); at += 7) {
    ASSERT_TRUE(d.send(bad.substr(at, 7)));
    ASSERT_TRUE(connection(server_->port()).request("GET", "/ping"));
  }
  auto res = d.exchange(kCanary);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  std::string after;
  EXPECT_TRUE(d.wait_closed(&after));
  EXPECT_EQ(after, "");
}

TEST_F(framing, CloseInAnyConnectionFieldEndsTheConnection) {
  // RFC 9112 9.3: "close" wins, in HTTP/1.0 over a "keep-alive" too, and in a second
  // Connection field as in the first. Proxy-Connection (no RFC field; Beast and llhttp read
  // it as Connection) the same way: found by fuzz_framing, where its "keep-alive" won.
  for (const char* raw : {"GET /ping HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n",
                          "GET /ping HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n"
                          "Connection: close\r\n\r\n",
                          "GET /ping HTTP/1.0\r\nProxy-Connection: close, keep-alive\r\n\r\n",
                          "GET /ping HTTP/1.0\r\nConnection: keep-alive\r\n"
                          "Proxy-Connection: close\r\n\r\n"}) {
    connection c(server_->port());
    http_response res;
    ASSERT_NO_FATAL_FAILURE(expect_answer_then_close(c, raw, 200, &res));
    EXPECT_EQ(res.header("connection"), "close") << raw;
  }
}

TEST_F(framing, AFieldThatBelongsInTheHeaderIs400InATrailer) {
  // Merged into the header's fields, a trailer Host would be a second Host after the check.
  for (const char* field :
       {"Host: y", "Connection: close", "Proxy-Connection: close", "Content-Length: 5"}) {
    SCOPED_TRACE(field);
    ASSERT_NO_FATAL_FAILURE(expect_refused(
        "POST /nope HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n" +
            std::string(field) + "\r\n\r\n",
        400));
  }
}

TEST_F(framing, AControlCharacterInAChunkExtensionIs400) {
  // Found by fuzz_framing: Beast took a NUL inside a quoted extension value.
  ASSERT_NO_FATAL_FAILURE(expect_refused(
      std::string("POST /nope HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "2;a=\"b\0c\"\r\n{}\r\n0\r\n\r\n",
                  80),
      400));
}

TEST_F(framing, HonestRequestsAreStillServed) {
  connection c(server_->port());
  ASSERT_NO_FATAL_FAILURE(expect_status(
      c.exchange("POST /nope HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "2\r\n{}\r\n0\r\n\r\n"),
      404));
  ASSERT_NO_FATAL_FAILURE(expect_status(
      c.exchange("POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: \t2 \r\n\r\n{}"), 404));
  ASSERT_NO_FATAL_FAILURE(expect_status(c.exchange("GET /ping HTTP/1.0\r\n\r\n"), 200));
}

}  // namespace
}  // namespace knit_test

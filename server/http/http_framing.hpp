// RFC 9112 (HTTP/1.1) sections 2.2, 3, 5 and 6: the checks on a request's head that decide
// where its message ends, made on the raw bytes before Beast's parser sees them.
//
// Why before Beast: Beast 1.81's parser is lenient where a server behind a balancer must not
// be. It takes a Transfer-Encoding other than a final `chunked` as "no body" (the body is then
// read as the next request), accepts `Transfer-Encoding: identity` before a Content-Length,
// joins an obs-fold line onto the previous field, accepts a line that begins with whitespace
// before the first field, takes two equal Content-Length fields as one, and refuses the empty
// lines before a request line that RFC 9112 section 2.2 says a server SHOULD ignore. Every one
// of those is decided here, whatever the order of the fields; Beast then parses a head that
// passed (it still checks tokens, the version, the Content-Length value's size and the body).
//
// The rules, each with the sentence it follows (docs/server-safety.md, "HTTP framing"):
//   - up to kMaxEmptyLines empty lines (CRLF) before the request line are skipped (2.2: "a
//     server that is expecting to receive and parse a request-line SHOULD ignore at least one
//     empty line (CRLF) received prior to the request-line"); more, or a bare LF, is 400;
//   - every line ends in CRLF; a bare CR or LF anywhere in the head is 400 (2.2);
//   - request-line = method SP request-target SP HTTP-version, single spaces, method a token,
//     the target visible ASCII only (3, 3.2: an invalid request-line gets 400);
//   - a line that begins with SP or HTAB is 400: before the first field (2.2: "reject the
//     received message as invalid") and after one (5.2, obs-fold: "reject the message by
//     sending a 400 (Bad Request)");
//   - field-name is a token immediately followed by ':' (5.1: whitespace before the colon
//     MUST get 400); a field value holds no NUL and no other control character but HTAB
//     (RFC 9110 5.5);
//   - Content-Length: at most one field, its value 1*DIGIT (RFC 9110 8.6; 9112 6.3 item 5);
//   - Transfer-Encoding with Content-Length: 400 (6.1: "A server MAY reject a request that
//     contains both Content-Length and Transfer-Encoding"; 6.3 item 3: "ought to be handled
//     as an error"); in an HTTP/1.0 request: 400 (6.1: "MUST treat the message as if the
//     framing is faulty");
//   - Transfer-Encoding whose codings (all its fields, in order) do not end in exactly one
//     `chunked`: 400 (6.3 item 4: "If a Transfer-Encoding header field is present in a
//     request and the chunked transfer coding is not the final encoding ... the server MUST
//     respond with the 400 (Bad Request) status code and then close the connection"); `chunked`
//     more than once: 400 (6.1: "MUST NOT apply the chunked transfer coding more than once");
//   - any other coding before the final `chunked` (gzip, deflate, ...): 501, since the server
//     decodes none (6.1: "A server that receives a request message with a transfer coding it
//     does not understand SHOULD respond with 501 (Not Implemented)").
// Every refusal closes the connection: after a head we refused we cannot know where the next
// request would start.
//
// Incremental: feed() is called with everything buffered so far, each time more arrives, and
// resumes where it stopped, so a head dribbled byte by byte is still scanned once.
#pragma once

#include <cstddef>
#include <string_view>

namespace knit_server {

// What the head read so far decides.
enum class head_verdict {
  need_more,        // no decision yet: read more bytes
  complete,         // a head that passed every check; it ends at head_end()
  bad_request,      // 400, then close
  not_implemented,  // 501 (a transfer coding other than chunked), then close
  too_large,        // the head passed the header limit without ending: 431, then close
};

// One request's head, checked as its bytes arrive. Reset it (assign a new one) for the next
// request.
class request_head_reader {
 public:
  // Empty lines (CRLF) skipped before a request line; one more is refused.
  static constexpr std::size_t kMaxEmptyLines = 4;

  // `header_limit`: the most bytes the head may have from the request line to its empty line
  // (server_config::kHeaderLimit, the limit Beast is given too).
  explicit request_head_reader(std::size_t header_limit) noexcept : limit_(header_limit) {}

  // `buffered`: every byte received for this request so far, from its first (the same bytes
  // as the previous call, and possibly more). Once the verdict is not need_more it does not
  // change.
  head_verdict feed(std::string_view buffered) noexcept;

  // The empty lines before the request line: the bytes to drop before the parser.
  std::size_t skip() const noexcept { return request_start_; }
  // Where the head ends (just after its empty line), when the verdict is complete.
  std::size_t head_end() const noexcept { return scanned_; }
  // A Connection (or Proxy-Connection) field of the head has the "close" option (RFC 9112
  // 9.3): the connection ends after the response, whatever else it says. Valid once the
  // verdict is complete.
  bool connection_close() const noexcept { return connection_close_; }
  // Why it was refused: a short phrase for tests and logs ("" while not refused).
  std::string_view reason() const noexcept { return reason_; }

 private:
  enum class part { empty_lines, request_line, fields, done };

  // The check_* steps return need_more when the line passes (the head goes on), else the
  // refusal.
  head_verdict refuse(head_verdict v, std::string_view reason) noexcept;
  head_verdict check_request_line(std::string_view line) noexcept;
  head_verdict check_field_line(std::string_view line) noexcept;
  head_verdict check_framing() noexcept;
  head_verdict add_transfer_codings(std::string_view value) noexcept;

  std::size_t limit_;
  part part_ = part::empty_lines;
  head_verdict verdict_ = head_verdict::need_more;
  std::size_t request_start_ = 0;  // where the request line starts (after the empty lines)
  std::size_t scanned_ = 0;        // bytes judged so far: always the start of a line
  std::string_view reason_;

  bool http10_ = false;
  bool fields_seen_ = false;
  bool connection_close_ = false;
  std::size_t content_lengths_ = 0;
  bool transfer_encoding_ = false;
  std::size_t codings_ = 0;       // transfer codings seen, in all Transfer-Encoding fields
  bool last_is_chunked_ = false;  // the last coding seen is `chunked`
  bool chunked_before_ = false;   // `chunked` appeared before the last coding
  bool other_coding_ = false;     // a coding other than `chunked` appeared
};

}  // namespace knit_server

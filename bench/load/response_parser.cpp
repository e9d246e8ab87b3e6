// Incremental HTTP/1.1 response parser: Beast's basic_parser fed one element at a time,
// with the split-independent limits and the interim-response handling knit-load needs.
#include "response_parser.hpp"

#include <algorithm>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

namespace knit_load {

namespace http = boost::beast::http;

namespace {
constexpr std::string_view kHeadEnd = "\r\n\r\n";
}  // namespace

void response_parser::reset(bool head_request) {
  head_request_ = head_request;
  state_ = parse_state::kParsing;
  started_ = false;
  keep_alive_ = true;
  pending_.clear();
  error_.clear();
  start_message();
}

void response_parser::start_message() {
  parser_.emplace();
  head_scanned_ = 0;
  // Never reached: parse() checks the head against kMaxHeadBytes before Beast sees it.
  // Bodies are counted, never held, so unbounded.
  parser_->header_limit(static_cast<std::uint32_t>(2 * kMaxHeadBytes));
  parser_->body_limit(boost::none);
  if (head_request_) parser_->skip(true);
}

std::size_t response_parser::element_limit() const {
  if (parser_->chunked() && !parser_->in_chunk_data) return kMaxLineBytes + 4;
  return kMaxHeadBytes;  // body bytes: any size works, this one is as good as any
}

response_parser::feed_result response_parser::fail(std::string why) {
  state_ = parse_state::kError;
  keep_alive_ = false;
  error_ = std::move(why);
  return feed_result::kError;
}

response_parser::feed_result response_parser::parse(std::string_view in, std::size_t& used) {
  while (true) {
    if (parser_->is_done()) {
      const int status = parser_->status;
      // Interim 1xx responses precede the real one on the same request (101 would switch
      // protocols, which a load generator cannot follow).
      if (status == 101) return fail("unexpected 101 switching protocols");
      if (status >= 100 && status < 200) {
        start_message();
        continue;
      }
      keep_alive_ = parser_->keep_alive();
      state_ = parse_state::kDone;
      return feed_result::kComplete;
    }
    if (used == in.size()) return feed_result::kNeedMore;
    std::size_t shown = 0;
    if (!parser_->is_header_done()) {
      // Beast is shown a head only once it is whole: given part of one, it reports some
      // errors early and others only at the end, so its answer would depend on the split.
      const std::string_view rest = in.substr(used);
      const std::size_t end = rest.find(kHeadEnd, std::min(head_scanned_, rest.size()));
      if (end == std::string_view::npos) {
        // Up to 3 of the bytes may be the start of the blank line, not part of the head.
        if (rest.size() > kMaxHeadBytes + kHeadEnd.size() - 1)
          return fail("response head too large");
        head_scanned_ = rest.size() >= 3 ? rest.size() - 3 : 0;
        return feed_result::kNeedMore;
      }
      if (end > kMaxHeadBytes) return fail("response head too large");
      shown = end + kHeadEnd.size();
    } else {
      shown = std::min(in.size() - used, element_limit());
    }
    boost::beast::error_code ec;
    used += parser_->put(boost::asio::const_buffer(in.data() + used, shown), ec);
    if (ec == http::error::need_more) {
      // A chunk line (or the last one with its trailer) longer than its limit: refused
      // whatever the split, as Beast is never shown more than the limit.
      if (shown == element_limit()) return fail("chunk line too long");
      return feed_result::kNeedMore;
    }
    if (ec) return fail(ec.message());
  }
}

response_parser::feed_result response_parser::feed(const char* data, std::size_t len,
                                                   std::size_t& consumed) {
  consumed = 0;
  if (state_ == parse_state::kError) return feed_result::kError;
  if (state_ == parse_state::kDone) return feed_result::kComplete;
  if (len > 0) started_ = true;
  // Fast path: nothing kept from an earlier read, parse the piece in place.
  std::size_t used = 0;
  if (pending_.empty()) {
    const std::string_view in(data, len);
    const feed_result r = parse(in, used);
    if (r == feed_result::kNeedMore) pending_.assign(in.substr(used));
    if (r == feed_result::kComplete) consumed = used;
    return r;
  }
  // Slow path: an element began in an earlier read; Beast sees it whole from its start.
  const std::size_t held = pending_.size();
  pending_.append(data, len);
  const feed_result r = parse(pending_, used);
  if (r == feed_result::kNeedMore) pending_.erase(0, used);
  if (r == feed_result::kComplete) {
    consumed = used - held;  // the held bytes came from earlier reads
    pending_.clear();
  }
  return r;
}

response_parser::feed_result response_parser::finish_eof() {
  if (state_ == parse_state::kDone) return feed_result::kComplete;
  if (state_ == parse_state::kError) return feed_result::kError;
  if (parser_->is_header_done() && parser_->need_eof() && pending_.empty()) {
    boost::beast::error_code ec;
    parser_->put_eof(ec);
    if (!ec && parser_->is_done()) {
      state_ = parse_state::kDone;
      keep_alive_ = false;
      return feed_result::kComplete;
    }
  }
  return fail(started_ ? "connection closed mid-response" : "connection closed before response");
}

}  // namespace knit_load

// Incremental HTTP/1.1 response parser: the state machine behind response_parser.
#include "response_parser.hpp"

#include <algorithm>
#include <cstring>

namespace knit_load {
namespace {

constexpr std::string_view kHeadEnd = "\r\n\r\n";

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Calls fn(token) for each comma-separated, trimmed, non-empty token.
template <typename Fn>
void for_each_token(std::string_view value, Fn fn) {
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    const std::string_view token = trim(value.substr(0, comma));
    if (!token.empty()) fn(token);
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
}

bool parse_decimal(std::string_view s, std::uint64_t& out) {
  if (s.empty() || s.size() > 18) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    if (!is_digit(c)) return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  out = v;
  return true;
}

bool parse_chunk_size(std::string_view line, std::uint64_t& out) {
  // Chunk extensions (";name=value") are allowed and ignored.
  line = trim(line.substr(0, line.find(';')));
  if (line.empty() || line.size() > 15) return false;
  std::uint64_t v = 0;
  for (char c : line) {
    int digit;
    if (is_digit(c)) {
      digit = c - '0';
    } else if (lower(c) >= 'a' && lower(c) <= 'f') {
      digit = lower(c) - 'a' + 10;
    } else {
      return false;
    }
    v = v * 16 + static_cast<std::uint64_t>(digit);
  }
  out = v;
  return true;
}

}  // namespace

void response_parser::reset(bool head_request) {
  state_ = parse_state::kHead;
  head_request_ = head_request;
  started_ = false;
  status_ = 0;
  keep_alive_ = true;
  remaining_ = 0;
  body_bytes_ = 0;
  head_buf_.clear();
  line_buf_.clear();
  error_.clear();
}

response_parser::feed_result response_parser::fail(std::string why) {
  state_ = parse_state::kError;
  keep_alive_ = false;
  error_ = std::move(why);
  return feed_result::kError;
}

bool response_parser::next_line(const char*& p, const char* end, std::string_view& line) {
  const auto* nl =
      static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
  if (nl == nullptr) {
    line_buf_.append(p, end);
    p = end;
    return false;
  }
  if (line_buf_.empty()) {
    line = std::string_view(p, static_cast<std::size_t>(nl - p));
  } else {
    line_buf_.append(p, nl);
    line = line_buf_;
  }
  p = nl + 1;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return true;
}

response_parser::feed_result response_parser::feed(const char* data, std::size_t len,
                                                   std::size_t& consumed) {
  const char* p = data;
  const char* const end = data + len;
  consumed = 0;
  if (len > 0) started_ = true;

  while (true) {
    switch (state_) {
      case parse_state::kError: return feed_result::kError;

      case parse_state::kDone:
        consumed = static_cast<std::size_t>(p - data);
        return feed_result::kComplete;

      case parse_state::kHead: {
        if (p == end) return feed_result::kNeedMore;
        // Fast path: the whole head is in this piece, parse it in place without copying.
        if (head_buf_.empty()) {
          const std::string_view in(p, static_cast<std::size_t>(end - p));
          const std::size_t pos = in.find(kHeadEnd);
          if (pos != std::string_view::npos) {
            // The limits hold however the reads split the bytes (fuzz_response_parser).
            if (pos > kMaxHeadBytes) return fail("response head too large");
            p += pos + kHeadEnd.size();
            if (parse_head(in.substr(0, pos)) == feed_result::kError) return feed_result::kError;
            continue;
          }
        }
        // Slow path: the head is split across reads; keep it until the blank line shows up.
        const std::size_t old_size = head_buf_.size();
        head_buf_.append(p, end);
        const std::size_t from = old_size >= 3 ? old_size - 3 : 0;
        const std::size_t pos = head_buf_.find(kHeadEnd, from);
        if (pos == std::string::npos) {
          p = end;
          // Up to 3 buffered bytes may be the start of the blank line, not part of the head.
          if (head_buf_.size() > kMaxHeadBytes + kHeadEnd.size() - 1)
            return fail("response head too large");
          return feed_result::kNeedMore;
        }
        if (pos > kMaxHeadBytes) return fail("response head too large");
        p += pos + kHeadEnd.size() - old_size;
        const std::string head = head_buf_.substr(0, pos);
        head_buf_.clear();
        if (parse_head(head) == feed_result::kError) return feed_result::kError;
        continue;
      }

      case parse_state::kBodyLength:
      case parse_state::kChunkData: {
        const auto take = std::min<std::uint64_t>(remaining_, static_cast<std::uint64_t>(end - p));
        p += take;
        remaining_ -= take;
        body_bytes_ += take;
        if (remaining_ > 0) return feed_result::kNeedMore;
        state_ =
            state_ == parse_state::kBodyLength ? parse_state::kDone : parse_state::kChunkDataEnd;
        continue;
      }

      case parse_state::kBodyUntilClose:
        body_bytes_ += static_cast<std::uint64_t>(end - p);
        p = end;
        return feed_result::kNeedMore;

      case parse_state::kChunkSize:
      case parse_state::kChunkDataEnd:
      case parse_state::kTrailer: {
        std::string_view line;
        if (!next_line(p, end, line)) {
          // The buffered part may end with the line's CR, which is not part of the line.
          if (line_buf_.size() > kMaxLineBytes + 1) return fail("chunk line too long");
          return feed_result::kNeedMore;
        }
        // A whole line is held to the same limit as a partial one, so that the answer does
        // not depend on where the reads split it (fuzz_response_parser checks this).
        if (line.size() > kMaxLineBytes) return fail("chunk line too long");
        if (state_ == parse_state::kChunkSize) {
          std::uint64_t size = 0;
          if (!parse_chunk_size(line, size)) return fail("bad chunk size");
          remaining_ = size;
          state_ = size == 0 ? parse_state::kTrailer : parse_state::kChunkData;
        } else if (state_ == parse_state::kChunkDataEnd) {
          if (!line.empty()) return fail("chunk data not followed by CRLF");
          state_ = parse_state::kChunkSize;
        } else if (line.empty()) {
          state_ = parse_state::kDone;  // the blank line after (optional) trailer fields
        }
        line_buf_.clear();
        continue;
      }
    }
  }
}

response_parser::feed_result response_parser::finish_eof() {
  if (state_ == parse_state::kBodyUntilClose) {
    state_ = parse_state::kDone;
    keep_alive_ = false;
    return feed_result::kComplete;
  }
  if (state_ == parse_state::kDone) return feed_result::kComplete;
  return fail(started_ ? "connection closed mid-response" : "connection closed before response");
}

response_parser::feed_result response_parser::parse_head(std::string_view head) {
  std::size_t eol = head.find("\r\n");
  const std::string_view status_line = head.substr(0, eol);
  // "HTTP/1.x SSS[ reason]"
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." ||
      !is_digit(status_line[7]) || status_line[8] != ' ' || !is_digit(status_line[9]) ||
      !is_digit(status_line[10]) || !is_digit(status_line[11]) ||
      (status_line.size() > 12 && status_line[12] != ' ')) {
    return fail("bad status line");
  }
  const bool http10 = status_line[7] == '0';
  status_ = (status_line[9] - '0') * 100 + (status_line[10] - '0') * 10 + (status_line[11] - '0');
  if (status_ < 100) return fail("bad status code");

  bool chunked = false;
  bool other_coding = false;
  bool has_length = false;
  std::uint64_t length = 0;
  bool saw_close = false;
  bool saw_keep_alive = false;

  std::string_view rest = eol == std::string_view::npos ? std::string_view{} : head.substr(eol + 2);
  while (!rest.empty()) {
    eol = rest.find("\r\n");
    const std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view{} : rest.substr(eol + 2);
    if (line.empty()) continue;
    // obs-fold continuation lines only extend a previous value; none we care about.
    if (line.front() == ' ' || line.front() == '\t') continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return fail("header line without name");
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "content-length")) {
      std::uint64_t v = 0;
      if (!parse_decimal(value, v)) return fail("bad content-length");
      if (has_length && v != length) return fail("conflicting content-length");
      has_length = true;
      length = v;
    } else if (iequals(name, "transfer-encoding")) {
      // Only a final "chunked" delimits the body; any other coding runs until close.
      chunked = false;
      other_coding = false;
      for_each_token(value, [&](std::string_view token) {
        chunked = iequals(token, "chunked");
        other_coding = !chunked;
      });
    } else if (iequals(name, "connection")) {
      for_each_token(value, [&](std::string_view token) {
        if (iequals(token, "close")) saw_close = true;
        if (iequals(token, "keep-alive")) saw_keep_alive = true;
      });
    }
  }

  keep_alive_ = !saw_close && (!http10 || saw_keep_alive);

  // Interim 1xx responses precede the real one on the same request (101 would switch
  // protocols, which a load generator cannot follow).
  if (status_ >= 100 && status_ < 200) {
    if (status_ == 101) return fail("unexpected 101 switching protocols");
    state_ = parse_state::kHead;
    return feed_result::kNeedMore;
  }
  if (head_request_ || status_ == 204 || status_ == 304) {
    state_ = parse_state::kDone;
  } else if (chunked) {
    state_ = parse_state::kChunkSize;
  } else if (other_coding) {
    state_ = parse_state::kBodyUntilClose;
    keep_alive_ = false;
  } else if (has_length) {
    remaining_ = length;
    state_ = length == 0 ? parse_state::kDone : parse_state::kBodyLength;
  } else {
    state_ = parse_state::kBodyUntilClose;
    keep_alive_ = false;
  }
  return feed_result::kNeedMore;
}

}  // namespace knit_load

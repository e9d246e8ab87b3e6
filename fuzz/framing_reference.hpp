// framing_reference: an independent reading of RFC 9112's message framing for requests, for
// fuzz_framing to hold knit-server's framing against. Written from the RFC's grammar, not from
// server/http/http_framing.cpp or Beast: a byte-at-a-time reader of where each request on a
// connection ends, or that it is invalid. It decides framing only: no size limits (the
// server's limits are policy; fuzz_framing stops comparing where one applies), no routes.
//
// Rules (RFC 9112 unless said): 2.2 up to kMaxEmptyLines CRLFs before a request line are
// skipped, every line ends in CRLF; 3 request-line = token SP 1*VCHAR SP "HTTP/1." ("0"/"1")
// CRLF; 5 field-line = token ":" OWS *(VCHAR / obs-text / SP / HTAB) CRLF, nothing that begins
// with whitespace (in a trailer, an obs-fold after a field is taken as SP, 5.2); 3.2 an
// HTTP/1.1 request has exactly one Host, HTTP/1.0 at most one; 6.1 and
// 6.3 the body: Transfer-Encoding (with no Content-Length, not in HTTP/1.0, codings ending in
// exactly one `chunked`, no other coding since none is decoded) then 7.1 the chunked body;
// else Content-Length (one field, 1*DIGIT); else none. 9.3: the connection persists after an
// HTTP/1.1 request unless Connection has `close`, after HTTP/1.0 only with `keep-alive`;
// a Connection value that is not a list of tokens is refused (RFC 9110 7.6.1). Not in the
// RFCs: a Proxy-Connection field (old clients' name for Connection) is read as Connection
// is, as llhttp (Node.js) and Beast read it, and knit with them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace framing_reference {

enum class ending {
  incomplete,  // the bytes end inside a request (or before the next one begins)
  invalid,     // a request is not valid framing: the server must refuse it
  closed,      // a request said the connection ends after it; later bytes are not read
};

struct reading {
  std::vector<std::size_t> ends;  // where each complete request ends (offset just after it)
  ending end = ending::incomplete;
};

inline constexpr std::size_t kMaxEmptyLines = 4;

class reader {
 public:
  explicit reader(std::string_view in) : in_(in) {}

  reading run() {
    reading r;
    for (;;) {
      const std::size_t start = at_;
      const int v = one_request();
      if (v == kIncomplete) {
        r.end = ending::incomplete;
        return r;
      }
      if (v == kInvalid) {
        r.end = ending::invalid;
        return r;
      }
      r.ends.push_back(at_);
      if (!persist_) {
        r.end = ending::closed;
        return r;
      }
      if (at_ == in_.size()) return r;  // incomplete: waiting for a next request
      (void)start;
    }
  }

 private:
  static constexpr int kOk = 0, kIncomplete = 1, kInvalid = 2;

  bool more() const { return at_ < in_.size(); }
  unsigned char peek() const { return static_cast<unsigned char>(in_[at_]); }

  static bool tchar(unsigned char c) {
    if (c >= '0' && c <= '9') return true;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
    switch (c) {
      case '!':
      case '#':
      case '$':
      case '%':
      case '&':
      case '\'':
      case '*':
      case '+':
      case '-':
      case '.':
      case '^':
      case '_':
      case '`':
      case '|':
      case '~': return true;
      default: return false;
    }
  }
  static bool hexdig(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  }
  static unsigned char lower(unsigned char c) {
    return (c >= 'A' && c <= 'Z') ? static_cast<unsigned char>(c + 32) : c;
  }
  static bool same_ci(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (lower(static_cast<unsigned char>(a[i])) != lower(static_cast<unsigned char>(b[i])))
        return false;
    return true;
  }

  // CRLF at at_: kOk (consumed), kIncomplete, or kInvalid.
  int crlf() {
    if (!more()) return kIncomplete;
    if (peek() != '\r') return kInvalid;
    ++at_;
    if (!more()) return kIncomplete;
    if (peek() != '\n') return kInvalid;
    ++at_;
    return kOk;
  }

  // 1*tchar into `out`, stopping at the first other byte.
  int token(std::string_view& out) {
    const std::size_t b = at_;
    while (more() && tchar(peek())) ++at_;
    if (!more()) return kIncomplete;
    if (at_ == b) return kInvalid;
    out = in_.substr(b, at_ - b);
    return kOk;
  }

  int literal(std::string_view s) {
    for (char c : s) {
      if (!more()) return kIncomplete;
      if (in_[at_] != c) return kInvalid;
      ++at_;
    }
    return kOk;
  }

  // Splits a comma list into trimmed, non-empty elements (RFC 9110 5.6.1).
  template <class F>
  static void each_element(std::string_view list, F f) {
    std::size_t b = 0;
    for (std::size_t i = 0; i <= list.size(); ++i) {
      if (i == list.size() || list[i] == ',') {
        std::string_view e = list.substr(b, i - b);
        while (!e.empty() && (e.front() == ' ' || e.front() == '\t')) e.remove_prefix(1);
        while (!e.empty() && (e.back() == ' ' || e.back() == '\t')) e.remove_suffix(1);
        if (!e.empty()) f(e);
        b = i + 1;
      }
    }
  }

  struct head {
    bool http10 = false;
    int hosts = 0;
    int content_lengths = 0;
    std::uint64_t content_length = 0;
    bool length_overflow = false;
    bool te = false;
    std::vector<std::string_view> codings;
    bool close = false, keep_alive = false;
  };

  // field-line CRLF, or the empty line (sets `end`).
  int field_line(head& h, bool& end, bool trailer) {
    if (!more()) return kIncomplete;
    if (peek() == '\r') {
      end = true;
      return crlf();
    }
    if (trailer && trailer_field_ && (peek() == ' ' || peek() == '\t')) {
      // An obs-fold in the trailer: RFC 9112 5.2 lets a recipient replace it with SP
      // instead of refusing (Beast does, and the trailer frames nothing). Its text is more
      // of the previous field's value.
      while (more() && peek() != '\r' && peek() != '\n') {
        const unsigned char c = peek();
        if ((c < 0x20 && c != '\t') || c == 0x7f) return kInvalid;
        ++at_;
      }
      return crlf();
    }
    std::string_view name;
    if (int v = token(name); v != kOk) return v;
    if (peek() != ':') return kInvalid;
    ++at_;
    const std::size_t vb = at_;
    while (more() && peek() != '\r' && peek() != '\n') {
      const unsigned char c = peek();
      if (c < 0x20 && c != '\t') return kInvalid;
      if (c == 0x7f) return kInvalid;
      ++at_;
    }
    std::string_view value = in_.substr(vb, at_ - vb);
    if (int v = crlf(); v != kOk) return v;
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (trailer) {
      trailer_field_ = true;
      // RFC 9110 6.5.1: fields that frame, route or end the message cannot be trailers;
      // knit refuses them (server/http/request_parser.hpp), and so does this reading.
      for (const char* f : {"host", "connection", "proxy-connection", "content-length",
                            "transfer-encoding", "keep-alive", "upgrade", "trailer", "te"}) {
        if (same_ci(name, f)) return kInvalid;
      }
      return kOk;
    }
    if (same_ci(name, "host")) ++h.hosts;
    if (same_ci(name, "content-length")) {
      // RFC 9110 8.6: a list or a second field is refused (the recipient's other choice,
      // merging equal values, is not taken), as soon as it is seen.
      if (++h.content_lengths > 1) return kInvalid;
      if (value.empty()) return kInvalid;
      std::uint64_t n = 0;
      for (char c : value) {
        if (c < '0' || c > '9') return kInvalid;
        if (n > (UINT64_MAX - 9) / 10) h.length_overflow = true;
        n = n * 10 + static_cast<unsigned>(c - '0');
      }
      h.content_length = n;
    }
    if (same_ci(name, "transfer-encoding")) {
      h.te = true;
      const std::size_t before = h.codings.size();
      each_element(value, [&](std::string_view e) { h.codings.push_back(e); });
      if (h.codings.size() == before) return kInvalid;  // a field that names no coding
    }
    if (same_ci(name, "connection") || same_ci(name, "proxy-connection")) {
      // RFC 9110 7.6.1: Connection = #connection-option, each a token. The persistence of
      // the connection depends on it, so a value that is not such a list is refused.
      // Proxy-Connection: as Connection (see the rules above).
      bool tokens = true;
      each_element(value, [&](std::string_view e) {
        for (char c : e) tokens = tokens && tchar(static_cast<unsigned char>(c));
      });
      if (!tokens) return kInvalid;
      each_element(value, [&](std::string_view e) {
        if (same_ci(e, "close")) h.close = true;
        if (same_ci(e, "keep-alive")) h.keep_alive = true;
      });
    }
    return kOk;
  }

  // chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] ), then CRLF.
  int chunk_ext_and_crlf() {
    for (;;) {
      // BWS belongs to an extension: whitespace then CRLF is not in the grammar.
      const std::size_t ws = at_;
      while (more() && (peek() == ' ' || peek() == '\t')) ++at_;
      if (!more()) return kIncomplete;
      if (peek() == '\r' && at_ == ws) return crlf();
      if (peek() != ';') return kInvalid;
      ++at_;
      while (more() && (peek() == ' ' || peek() == '\t')) ++at_;
      std::string_view name;
      if (int v = token(name); v != kOk) return v;
      const std::size_t before = at_;
      while (more() && (peek() == ' ' || peek() == '\t')) ++at_;
      if (!more()) return kIncomplete;
      if (peek() != '=') {
        at_ = before;
        continue;
      }
      ++at_;
      while (more() && (peek() == ' ' || peek() == '\t')) ++at_;
      if (!more()) return kIncomplete;
      if (peek() == '"') {
        // quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE
        ++at_;
        for (;;) {
          if (!more()) return kIncomplete;
          const unsigned char c = peek();
          if (c == '"') {
            ++at_;
            break;
          }
          if (c == '\\') {
            ++at_;
            if (!more()) return kIncomplete;
            const unsigned char q = peek();
            if (q != '\t' && (q < 0x20 || q == 0x7f)) return kInvalid;
            ++at_;
            continue;
          }
          if (c != '\t' && (c < 0x20 || c == 0x7f)) return kInvalid;
          ++at_;
        }
      } else {
        std::string_view val;
        if (int v = token(val); v != kOk) return v;
      }
    }
  }

  int chunked_body() {
    for (;;) {
      std::uint64_t size = 0;
      const std::size_t b = at_;
      while (more() && hexdig(peek())) {
        if (size >> 60) return kInvalid;  // RFC 9112 7.1: guard against overflow
        const unsigned char c = lower(peek());
        size = size * 16 + static_cast<unsigned>(c <= '9' ? c - '0' : c - 'a' + 10);
        ++at_;
      }
      if (!more()) return kIncomplete;
      if (at_ == b) return kInvalid;
      if (int v = chunk_ext_and_crlf(); v != kOk) return v;
      if (size == 0) break;
      if (in_.size() - at_ < size) return kIncomplete;
      at_ += size;
      if (int v = crlf(); v != kOk) return v;
    }
    // trailer-section CRLF
    head ignored;
    trailer_field_ = false;
    for (bool end = false; !end;) {
      if (int v = field_line(ignored, end, true); v != kOk) return v;
    }
    return kOk;
  }

  int one_request() {
    // RFC 9112 2.2: empty lines before the request line.
    for (std::size_t n = 0;; ++n) {
      if (!more()) return kIncomplete;
      if (peek() != '\r') break;
      if (n == kMaxEmptyLines) return kInvalid;
      if (int v = crlf(); v != kOk) return v;
    }
    head h;
    std::string_view method;
    if (int v = token(method); v != kOk) return v;
    if (int v = literal(" "); v != kOk) return v;
    const std::size_t tb = at_;
    while (more() && peek() > 0x20 && peek() < 0x7f) ++at_;
    if (!more()) return kIncomplete;
    if (at_ == tb) return kInvalid;
    if (int v = literal(" HTTP/1."); v != kOk) return v;
    if (!more()) return kIncomplete;
    if (peek() != '0' && peek() != '1') return kInvalid;
    h.http10 = peek() == '0';
    ++at_;
    if (int v = crlf(); v != kOk) return v;
    for (bool end = false; !end;) {
      if (int v = field_line(h, end, false); v != kOk) return v;
    }
    persist_ = h.http10 ? (h.keep_alive && !h.close) : !h.close;
    if (h.http10 ? h.hosts > 1 : h.hosts != 1) return kInvalid;
    if (h.te) {
      if (h.content_lengths > 0 || h.http10 || h.codings.empty()) return kInvalid;
      for (std::size_t i = 0; i < h.codings.size(); ++i) {
        if (!same_ci(h.codings[i], "chunked") || i + 1 != h.codings.size()) return kInvalid;
      }
      return chunked_body();
    }
    if (h.content_lengths > 1 || h.length_overflow) return kInvalid;
    if (h.content_lengths == 1) {
      if (in_.size() - at_ < h.content_length) return kIncomplete;
      at_ += h.content_length;
    }
    return kOk;
  }

  std::string_view in_;
  std::size_t at_ = 0;
  bool persist_ = true;
  bool trailer_field_ = false;  // a trailer field line was read (an obs-fold may follow)
};

inline reading read(std::string_view in) { return reader(in).run(); }

}  // namespace framing_reference

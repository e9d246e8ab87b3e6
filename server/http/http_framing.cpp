// RFC 9112 sections 2.2, 3, 5 and 6 on a request head's raw bytes (http_framing.hpp).
#include "http/http_framing.hpp"

#include <cstring>

#include "invariant.hpp"  // KNIT_ASSERT (the knit_internal target)

namespace knit_server {

namespace {

// RFC 9110 5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
// "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA.
bool is_tchar(unsigned char c) noexcept {
  if ((c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')) return true;
  return c != 0 && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr;
}

bool is_token(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (const char c : s) {
    if (!is_tchar(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if ((a[i] | 0x20) != (b[i] | 0x20)) return false;
  }
  return true;
}

// What the check_* steps return when the line passes: the head goes on.
constexpr head_verdict kGoOn = head_verdict::need_more;

bool is_ows(char c) noexcept { return c == ' ' || c == '\t'; }

std::string_view trim_ows(std::string_view s) noexcept {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace

head_verdict request_head_reader::refuse(head_verdict v, std::string_view reason) noexcept {
  verdict_ = v;
  reason_ = reason;
  part_ = part::done;
  return v;
}

head_verdict request_head_reader::feed(std::string_view buffered) noexcept {
  KNIT_ASSERT(buffered.size() >= scanned_);
  while (part_ != part::done) {
    if (part_ == part::empty_lines) {
      // Skip CRLFs; anything else starts the request line.
      if (buffered.size() - scanned_ < 2) {
        if (scanned_ == buffered.size() || buffered[scanned_] == '\r') return verdict_;
      } else if (buffered[scanned_] == '\r' && buffered[scanned_ + 1] == '\n') {
        if (scanned_ / 2 == kMaxEmptyLines) {
          return refuse(head_verdict::bad_request, "too many empty lines before the request");
        }
        scanned_ += 2;
        request_start_ = scanned_;
        continue;
      }
      part_ = part::request_line;
      continue;
    }

    // The next line, up to its LF.
    const std::size_t lf = buffered.find('\n', scanned_);
    if (lf == std::string_view::npos) {
      // A line still arriving. The limit counts from the request line, as Beast's does.
      if (buffered.size() - request_start_ > limit_) {
        return refuse(head_verdict::too_large, "the head is over the header limit");
      }
      return verdict_;
    }
    if (lf + 1 - request_start_ > limit_) {
      return refuse(head_verdict::too_large, "the head is over the header limit");
    }
    if (lf == scanned_ || buffered[lf - 1] != '\r') {
      return refuse(head_verdict::bad_request, "a line that ends in a bare LF");
    }
    const std::string_view line = buffered.substr(scanned_, lf - 1 - scanned_);
    if (line.find('\r') != std::string_view::npos) {
      return refuse(head_verdict::bad_request, "a bare CR");
    }
    scanned_ = lf + 1;

    head_verdict v;
    if (part_ == part::request_line) {
      v = check_request_line(line);
      part_ = part::fields;
    } else if (line.empty()) {
      v = check_framing();
      if (v == kGoOn) {
        verdict_ = head_verdict::complete;
        part_ = part::done;
        return verdict_;
      }
    } else {
      v = check_field_line(line);
    }
    if (v != kGoOn) return v;
  }
  return verdict_;
}

head_verdict request_head_reader::check_request_line(std::string_view line) noexcept {
  // RFC 9112 3: request-line = method SP request-target SP HTTP-version. Exactly one SP each:
  // 3 allows parsing on whitespace boundaries, and a server behind another parser must not.
  const std::size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return refuse(head_verdict::bad_request, "no request target");
  const std::size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return refuse(head_verdict::bad_request, "no HTTP version");
  if (!is_token(line.substr(0, sp1))) return refuse(head_verdict::bad_request, "a bad method");
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (target.empty()) return refuse(head_verdict::bad_request, "an empty request target");
  for (const char c : target) {
    // RFC 3986 characters are all visible ASCII; anything else (space, CTL, UTF-8 bytes) is
    // not a request-target (RFC 9112 3.2: an invalid request-line gets 400).
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return refuse(head_verdict::bad_request, "a bad request target");
  }
  // HTTP-version = "HTTP/" DIGIT "." DIGIT (2.3), with nothing after it. Beast refuses the
  // versions other than 1.0 and 1.1.
  const std::string_view version = line.substr(sp2 + 1);
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[5] < '0' ||
      version[5] > '9' || version[6] != '.' || version[7] < '0' || version[7] > '9') {
    return refuse(head_verdict::bad_request, "a bad HTTP version");
  }
  http10_ = version == "HTTP/1.0";
  return kGoOn;
}

head_verdict request_head_reader::check_field_line(std::string_view line) noexcept {
  if (is_ows(line.front())) {
    return refuse(head_verdict::bad_request,
                  fields_seen_ ? "an obs-fold (a field line that begins with whitespace)"
                               : "whitespace before the first field");
  }
  fields_seen_ = true;
  const std::size_t colon = line.find(':');
  if (colon == std::string_view::npos)
    return refuse(head_verdict::bad_request, "a field without ':'");
  const std::string_view name = line.substr(0, colon);
  if (!is_token(name)) return refuse(head_verdict::bad_request, "a bad field name");
  for (const char c : line.substr(colon + 1)) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && u != '\t') || u == 0x7f) {
      return refuse(head_verdict::bad_request, "a control character in a field value");
    }
  }
  const std::string_view value = trim_ows(line.substr(colon + 1));

  if (iequals(name, "content-length")) {
    if (++content_lengths_ > 1) return refuse(head_verdict::bad_request, "two Content-Length");
    if (value.empty()) return refuse(head_verdict::bad_request, "an empty Content-Length");
    for (const char c : value) {
      if (c < '0' || c > '9') return refuse(head_verdict::bad_request, "a bad Content-Length");
    }
  } else if (iequals(name, "connection") || iequals(name, "proxy-connection")) {
    // RFC 9112 9.3: "close" ends the connection after the response, whatever else any
    // Connection field says (Beast lets an HTTP/1.0 "keep-alive" win). Proxy-Connection, old
    // clients' name for it, is no RFC field, but Beast (as llhttp) reads it as Connection:
    // so does this, or its "keep-alive" would win there too (found by fuzz_framing).
    for (std::string_view list = value; !list.empty();) {
      const std::size_t comma = list.find(',');
      if (iequals(trim_ows(list.substr(0, comma)), "close")) connection_close_ = true;
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
  } else if (iequals(name, "transfer-encoding")) {
    transfer_encoding_ = true;
    return add_transfer_codings(value);
  }
  return kGoOn;
}

head_verdict request_head_reader::add_transfer_codings(std::string_view value) noexcept {
  // RFC 9112 6.1: Transfer-Encoding = #transfer-coding; several fields make one list, in
  // order (RFC 9110 5.3). Empty list elements are ignored (RFC 9110 5.6.1), but a field
  // with no coding at all is refused: it names no framing, and Beast takes a second
  // Transfer-Encoding field after a `chunked` for a duplicate.
  const std::size_t before = codings_;
  while (!value.empty()) {
    const std::size_t comma = value.find(',');
    const std::string_view coding = trim_ows(value.substr(0, comma));
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    if (coding.empty()) continue;
    ++codings_;
    if (last_is_chunked_) chunked_before_ = true;
    // `chunked` takes no parameters: "chunked;x=1" is some other coding.
    last_is_chunked_ = iequals(coding, "chunked");
    if (!last_is_chunked_) other_coding_ = true;
  }
  if (codings_ == before) return refuse(head_verdict::bad_request, "an empty Transfer-Encoding");
  return kGoOn;
}

head_verdict request_head_reader::check_framing() noexcept {
  if (!transfer_encoding_) return kGoOn;
  if (content_lengths_ > 0) {
    return refuse(head_verdict::bad_request, "Transfer-Encoding with Content-Length");
  }
  if (http10_) return refuse(head_verdict::bad_request, "Transfer-Encoding in HTTP/1.0");
  if (!last_is_chunked_) {
    return refuse(head_verdict::bad_request, "Transfer-Encoding without a final chunked");
  }
  if (chunked_before_) return refuse(head_verdict::bad_request, "chunked applied twice");
  if (other_coding_) {
    return refuse(head_verdict::not_implemented, "a transfer coding other than chunked");
  }
  return kGoOn;
}

}  // namespace knit_server

// The Date header (RFC 9110 section 6.6.1: an origin server with a clock sends one) in its
// only generated form, IMF-fixdate (RFC 9110 section 5.6.7): "Sun, 06 Nov 1994 08:49:37 GMT".
// Its resolution is a second, so one rendering serves every response within that second.
#pragma once

#include <chrono>
#include <string>

namespace knit_server {

// `t` as IMF-fixdate, in UTC, truncated to the second (29 characters in years 1000 to 9999).
std::string imf_fixdate(std::chrono::system_clock::time_point t);

// The header lines GET /plaintext adds to its head, as TechEmpower's plaintext test requires:
// "Server: knit\r\nDate: <IMF-fixdate of now>\r\n". Rendered when the second changes, once per
// thread (multi mode runs several io threads; none waits for another's rendering); the
// reference stays valid until the calling thread's next call.
const std::string& server_and_date_headers(std::chrono::system_clock::time_point now);

}  // namespace knit_server

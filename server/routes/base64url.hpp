// base64url without padding (RFC 4648 section 5), the encoding of every JWT segment.
#pragma once

#include <string>
#include <string_view>

namespace knit_server::routes {

// Appends base64url(bytes) with the '=' padding stripped, as hono/jwt's encodeBase64Url does.
void append_base64url(std::string& out, std::string_view bytes);

}  // namespace knit_server::routes

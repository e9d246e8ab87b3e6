// HMAC-SHA256 through OpenSSL 3's EVP_MAC, with one pre-keyed context per thread.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace knit_server::routes {

using sha256_digest = std::array<unsigned char, 32>;

// HMAC-SHA256(key, message). Thread-safe: the HMAC algorithm is fetched once per process and
// each thread keeps its own EVP_MAC_CTX, re-keyed only when `key` differs from the last call's
// (a fetch or re-key on every call is what makes OpenSSL 3 slow and contended under threads,
// openssl#17064/#21005). Throws std::runtime_error if OpenSSL fails.
sha256_digest hmac_sha256(std::string_view key, std::string_view message);

}  // namespace knit_server::routes

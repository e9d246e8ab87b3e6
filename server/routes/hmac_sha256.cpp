// HMAC-SHA256 with a process-wide fetched EVP_MAC and a thread_local, pre-keyed EVP_MAC_CTX.
#include "hmac_sha256.hpp"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <stdexcept>
#include <string>

namespace knit_server::routes {

namespace {

EVP_MAC* fetched_hmac() {
  // Fetched once and kept for the process lifetime: fetching takes a global lock in 3.0.
  static EVP_MAC* const mac = [] {
    EVP_MAC* m = EVP_MAC_fetch(nullptr, OSSL_MAC_NAME_HMAC, nullptr);
    if (m == nullptr) throw std::runtime_error("EVP_MAC_fetch(HMAC) failed");
    return m;
  }();
  return mac;
}

// One per thread, so no locking; remembers its key so that the common case (the same secret
// every call) re-initialises with a NULL key, which since OpenSSL 3.0.3 reuses the loaded key.
struct thread_context {
  EVP_MAC_CTX* ctx = nullptr;
  std::string key;
  bool keyed = false;

  thread_context() : ctx(EVP_MAC_CTX_new(fetched_hmac())) {
    if (ctx == nullptr) throw std::runtime_error("EVP_MAC_CTX_new failed");
  }
  ~thread_context() { EVP_MAC_CTX_free(ctx); }
  thread_context(const thread_context&) = delete;
  thread_context& operator=(const thread_context&) = delete;
};

}  // namespace

sha256_digest hmac_sha256(std::string_view key, std::string_view message) {
  thread_local thread_context local;
  int ok = 0;
  if (local.keyed && key == local.key) {
    ok = EVP_MAC_init(local.ctx, nullptr, 0, nullptr);
  } else {
    char digest_name[] = "SHA256";
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
        OSSL_PARAM_construct_end(),
    };
    // A NULL key pointer means "reuse the loaded key", so an empty key needs a real pointer.
    static constexpr unsigned char kNoBytes[1] = {0};
    const unsigned char* key_bytes =
        key.empty() ? kNoBytes : reinterpret_cast<const unsigned char*>(key.data());
    local.keyed = false;
    ok = EVP_MAC_init(local.ctx, key_bytes, key.size(), params);
    if (ok == 1) {
      local.key.assign(key);
      local.keyed = true;
    }
  }
  if (ok != 1) throw std::runtime_error("EVP_MAC_init failed");
  if (EVP_MAC_update(local.ctx, reinterpret_cast<const unsigned char*>(message.data()),
                     message.size()) != 1) {
    throw std::runtime_error("EVP_MAC_update failed");
  }
  sha256_digest out{};
  std::size_t length = 0;
  if (EVP_MAC_final(local.ctx, out.data(), &length, out.size()) != 1 || length != out.size()) {
    throw std::runtime_error("EVP_MAC_final failed");
  }
  return out;
}

}  // namespace knit_server::routes

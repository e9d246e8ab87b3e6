// POST /jwt: the reference route's zod schema for {user:{id,email?,role?}, ttlSec?}, then
// hono/jwt's sign() (HS256) and the JSON.stringify of the 200 body.
#include "base64url.hpp"
#include "email.hpp"
#include "hmac_sha256.hpp"
#include "js_json.hpp"
#include "js_number.hpp"
#include "js_string.hpp"
#include "routes.hpp"
#include "utf8.hpp"

#include <cmath>

namespace knit_server::routes {

namespace {

struct jwt_claims {
  std::string_view id;     // WTF-8, non-empty
  std::string_view email;  // empty when absent (a present email is never empty: it must match)
  std::string_view role;   // "member" when absent
  std::int64_t ttl_sec;    // 30..86400
};

// ttlSec: z.preprocess(Number -> finite ? clamp(floor, 30, 86400) : 900).optional().default(900).
// default() replaces only undefined, and 900 passes the preprocess unchanged.
std::int64_t normalised_ttl(const js::document& doc, const js::node* v) {
  if (v == nullptr) return 900;
  const double n = js::to_number(doc, v);
  if (!std::isfinite(n)) return 900;
  return static_cast<std::int64_t>(std::fmax(30.0, std::fmin(86'400.0, std::floor(n))));
}

// z.string().min(1): a string of at least one UTF-16 unit, i.e. non-empty.
bool is_nonempty_string(const js::document& doc, const js::node* v) {
  return v != nullptr && v->type == js::kind::string && !doc.text(*v).empty();
}

std::optional<jwt_claims> validate(const js::document& doc) {
  const js::node& root = doc.root();
  if (root.type != js::kind::object) return std::nullopt;
  // zod parses every key of the shape before it reports failure, so ttlSec's Number() runs
  // (and may throw) even when user is invalid; evaluate it first to keep that order of effects.
  const js::node* user = doc.member(root, "user");
  const std::int64_t ttl = normalised_ttl(doc, doc.member(root, "ttlSec"));
  if (user == nullptr || user->type != js::kind::object) return std::nullopt;

  const js::node* id = doc.member(*user, "id");
  const js::node* email = doc.member(*user, "email");
  const js::node* role = doc.member(*user, "role");
  if (!is_nonempty_string(doc, id)) return std::nullopt;
  // optional() admits only undefined: "email": null fails, as does any non-string.
  if (email != nullptr && (email->type != js::kind::string || !is_zod_email(doc.text(*email)))) {
    return std::nullopt;
  }
  if (role != nullptr && !is_nonempty_string(doc, role)) return std::nullopt;
  return jwt_claims{doc.text(*id), email != nullptr ? doc.text(*email) : std::string_view{},
                    role != nullptr ? doc.text(*role) : std::string_view{"member"}, ttl};
}

}  // namespace

std::optional<std::string> issue_jwt(std::string_view body, std::string_view secret,
                                     std::int64_t now_sec) {
  const std::optional<std::string_view> text = utf8::decode_fatal(body);
  if (!text) return std::nullopt;
  const std::optional<js::document> doc = js::document::parse(*text);
  if (!doc) return std::nullopt;
  const std::optional<jwt_claims> claims = validate(*doc);
  if (!claims) return std::nullopt;
  // crypto.subtle.importKey("raw", ...) rejects an empty HMAC key with a DataError, so the
  // reference route's sign() throws for every request when secret is "".
  if (secret.empty()) throw js_error("DataError: HMAC key data must not be empty");

  const std::int64_t exp = now_sec + claims->ttl_sec;

  // JSON.stringify({sub, email, role, iat, exp}): insertion order; email dropped if undefined.
  std::string payload = "{\"sub\":";
  js::append_json_quoted(payload, claims->id);
  if (!claims->email.empty()) {
    payload += ",\"email\":";
    js::append_json_quoted(payload, claims->email);
  }
  payload += ",\"role\":";
  js::append_json_quoted(payload, claims->role);
  payload += ",\"iat\":" + std::to_string(now_sec) + ",\"exp\":" + std::to_string(exp) + "}";

  // base64url('{"alg":"HS256","typ":"JWT"}'), the same for every token.
  std::string token = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.";
  append_base64url(token, payload);  // payload is pure ASCII + UTF-8: its bytes are its encoding
  const sha256_digest mac = hmac_sha256(secret, token);
  token += '.';
  append_base64url(token, std::string_view(reinterpret_cast<const char*>(mac.data()), mac.size()));

  // JSON.stringify({ok: true, token, sub: user.id, exp})
  std::string out = "{\"ok\":true,\"token\":\"";
  out += token;  // base64url and '.': nothing to escape
  out += "\",\"sub\":";
  js::append_json_quoted(out, claims->id);
  out += ",\"exp\":" + std::to_string(exp) + "}";
  return out;
}

}  // namespace knit_server::routes

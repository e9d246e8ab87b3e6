// The reference routes (docs/reference-server.md) as pure functions: no sockets, no pool, no
// globals except a per-thread HMAC context. The server calls them inline or from a pool worker.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace knit_server::routes {

// Thrown by render_ssr_page and issue_jwt where the reference route's JS itself throws, so the
// caller can answer what Hono's default error handler answers: 500, "Internal Server Error",
// text/plain. It happens only for hostile bodies: Number() of an object that has an own "toString"
// key (e.g. {"projects":{"toString":1}}) is a TypeError in JS, and WebCrypto refuses an empty
// HMAC secret (DataError). Every other input gets a normal 200/400 answer.
class js_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `new Date(t).toISOString()`: "2026-11-29T09:15:39.123Z" (UTC, milliseconds, 'Z').
std::string iso8601_ms(std::chrono::system_clock::time_point t);

// GET /ping body: {"ok":true,"pong":true,"runtime":"<runtime>","ts":"<iso8601_ms(now)>"}
// (the key order and spelling of Hono's c.json of the reference route's object literal).
std::string ping_body(std::string_view runtime, std::chrono::system_clock::time_point now);

// POST /ssr: the whole response body, "<!doctype html>" + React's renderToString of UserCard,
// for the raw request body bytes (strict UTF-8; invalid UTF-8 or non-object JSON -> {}).
// `rendered_at` is the already formatted ISO-8601 timestamp. Throws js_error where the reference
// route throws (see js_error).
std::string render_ssr_page(std::string_view body, std::string_view rendered_at);

// POST /jwt: the 200 response body {"ok":true,"token":...,"sub":...,"exp":...}, or nullopt
// when the reference route answers 400 "Bad request". `now_sec` = Math.floor(Date.now()/1000).
// Thread-safe: each thread keeps its own pre-keyed HMAC context. Throws js_error where the
// reference route throws (see js_error), std::runtime_error if OpenSSL itself fails.
std::optional<std::string> issue_jwt(std::string_view body, std::string_view secret,
                                     std::int64_t now_sec);

// Cost emulation (KNIT_SSR_COST_US / KNIT_JWT_COST_US): keeps computing until the calling
// thread's CPU time has advanced `cost_us` microseconds past `thread_cpu_start_ns`
// (from thread_cpu_ns()). The computation's result is returned so it cannot be optimised out.
std::uint64_t thread_cpu_ns();
std::uint64_t burn_cpu_until(std::uint64_t thread_cpu_start_ns, std::uint32_t cost_us);

}  // namespace knit_server::routes

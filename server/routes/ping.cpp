// GET /ping: Hono's c.json of the reference route's object literal, keys in source order.
#include "js_string.hpp"
#include "routes.hpp"

namespace knit_server::routes {

std::string ping_body(std::string_view runtime, std::chrono::system_clock::time_point now) {
  std::string out = R"({"ok":true,"pong":true,"runtime":)";
  js::append_json_quoted(out, runtime);
  out += R"(,"ts":")";
  out += iso8601_ms(now);  // only digits, '-', ':', '.', 'T', 'Z': nothing to escape
  out += "\"}";
  return out;
}

}  // namespace knit_server::routes

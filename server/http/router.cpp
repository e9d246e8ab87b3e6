// Route matching: strip the query, compare the path exactly, then check the method; route names.
#include "http/router.hpp"

namespace knit_server {

route match_route(boost::beast::http::verb method, std::string_view target) noexcept {
  using boost::beast::http::verb;

  // The query string plays no part in routing.
  const std::string_view path = target.substr(0, target.find('?'));

  if (path == "/ping") {
    return method == verb::get || method == verb::head ? route::ping : route::not_found;
  }
  // Not a Hono route: TechEmpower's plaintext test, for comparing with other servers.
  if (path == "/plaintext") {
    return method == verb::get || method == verb::head ? route::plaintext : route::not_found;
  }
  if (path == "/ssr") return method == verb::post ? route::ssr : route::not_found;
  if (path == "/jwt") return method == verb::post ? route::jwt : route::not_found;
  // The operations endpoints, like /ping: GET, and HEAD answered by the GET route.
  const bool get = method == verb::get || method == verb::head;
  if (path == "/livez") return get ? route::livez : route::not_found;
  if (path == "/readyz") return get ? route::readyz : route::not_found;
  if (path == "/metrics") return get ? route::metrics : route::not_found;
  return route::not_found;
}

std::string_view to_string(route r) noexcept {
  switch (r) {
    case route::ping: return "ping";
    case route::ssr: return "ssr";
    case route::jwt: return "jwt";
    case route::livez: return "livez";
    case route::readyz: return "readyz";
    case route::metrics: return "metrics";
    case route::plaintext: return "plaintext";
    case route::not_found: return "other";
  }
  return "other";
}

}  // namespace knit_server

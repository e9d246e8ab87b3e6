// Route matching: strip the query, compare the path exactly, then check the method.
#include "router.hpp"

namespace knit_server {

route match_route(boost::beast::http::verb method, std::string_view target) noexcept {
  using boost::beast::http::verb;

  // The query string plays no part in routing.
  const std::string_view path = target.substr(0, target.find('?'));

  if (path == "/ping") {
    return method == verb::get || method == verb::head ? route::ping : route::not_found;
  }
  if (path == "/ssr") return method == verb::post ? route::ssr : route::not_found;
  if (path == "/jwt") return method == verb::post ? route::jwt : route::not_found;
  return route::not_found;
}

}  // namespace knit_server

// Maps a request's method and target to one of the reference routes, matching the way Hono does.
#pragma once

#include <ostream>  // Boost 1.81's verb.hpp uses operator<< on string_view without including it
#include <string_view>

#include <boost/beast/http/verb.hpp>

namespace knit_server {

enum class route {
  ping,       // GET /ping: cheap, always on the host thread
  ssr,        // POST /ssr: heavy, inline or pooled
  jwt,        // POST /jwt: heavy, inline or pooled
  not_found,  // anything else, including a known path with the wrong method (Hono answers 404)
};

// Hono's router looks at the path only: "/ping?x=1" is /ping. Matching is exact (Hono's
// default strict mode: "/ping/" is not "/ping"). HEAD is answered by the GET route, as Hono
// does, and the session then drops the body.
route match_route(boost::beast::http::verb method, std::string_view target) noexcept;

// True for the routes whose work runs through heavy_placement.
constexpr bool is_heavy(route r) noexcept { return r == route::ssr || r == route::jwt; }

}  // namespace knit_server

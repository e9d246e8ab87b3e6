// Maps a request's method and target to one of the reference routes, matching the way Hono does,
// or to one of the server's own operations endpoints (/livez, /readyz, /metrics).
#pragma once

#include <cstddef>
#include <ostream>  // Boost 1.81's verb.hpp uses operator<< on string_view without including it
#include <string_view>

#include <boost/beast/http/verb.hpp>

namespace knit_server {

enum class route {
  ping,       // GET /ping: cheap, always on the host thread
  ssr,        // POST /ssr: heavy, inline or pooled
  jwt,        // POST /jwt: heavy, inline or pooled
  livez,      // GET /livez: 200 while the process can serve (process_status.hpp)
  readyz,     // GET /readyz: 200 while it wants traffic, 503 draining or degraded
  metrics,    // GET /metrics: the Prometheus text exposition (metrics_exposition.hpp)
  plaintext,  // GET /plaintext: TechEmpower's plaintext test (responses.hpp); cheap, like /ping
  not_found,  // anything else, including a known path with the wrong method (Hono answers 404)
};

// How many routes there are: the size of a per-route table (request_metrics.hpp).
inline constexpr std::size_t kRouteCount = static_cast<std::size_t>(route::not_found) + 1;

// Hono's router looks at the path only: "/ping?x=1" is /ping. Matching is exact (Hono's
// default strict mode: "/ping/" is not "/ping"). HEAD is answered by the GET route, as Hono
// does, and the session then drops the body.
route match_route(boost::beast::http::verb method, std::string_view target) noexcept;

// True for the routes whose work runs through heavy_placement.
constexpr bool is_heavy(route r) noexcept { return r == route::ssr || r == route::jwt; }

// The operations endpoints: answered on the event loop from the process's own state, never
// queued behind heavy work and never refused by admission (they are not heavy), so a load
// balancer's health check sees the server's state rather than its queue.
constexpr bool is_ops_endpoint(route r) noexcept {
  return r == route::livez || r == route::readyz || r == route::metrics;
}

// The route's name as the knit_http_* metrics label it: "ping", "ssr", "jwt", "livez",
// "readyz", "metrics", "plaintext", "other" (not_found, and requests refused before routing).
std::string_view to_string(route r) noexcept;

}  // namespace knit_server

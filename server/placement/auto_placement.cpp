// The auto placement's knit-stats field: each heavy route's calls per path and measured cost.
#include "placement/auto_placement.hpp"

namespace knit_server {

std::string auto_placement::stats_json() const {
  std::string json = "{";
  for (const route r : {route::ssr, route::jwt}) {
    const offload_policy& p = policy(r);
    if (r != route::ssr) json += ',';
    json += r == route::ssr ? "\"ssr\":{\"inline\":" : "\"jwt\":{\"inline\":";
    json += std::to_string(p.inline_calls());
    json += ",\"pooled\":";
    json += std::to_string(p.pooled_calls());
    json += ",\"avg_ns\":";
    json += std::to_string(p.average_ns());
    json += '}';
  }
  json += '}';
  return json;
}

}  // namespace knit_server

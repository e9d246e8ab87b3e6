// The heavy routes' work itself, with the CPU-cost emulation that makes a C++ route cost what a Bun route costs.
#include "heavy_dispatch.hpp"

#include <chrono>

#include "routes/routes.hpp"

namespace knit_server {

queue_state heavy_dispatch::queue() const noexcept {
  const knit::pool& pool = host_->get_pool();
  return {pool.pending(), pool.options().threads, pool.call_time_estimate()};
}

heavy_output heavy_job::operator()(std::string&& body) const {
  namespace routes = knit_server::routes;
  using clock = std::chrono::system_clock;

  // Start the CPU clock before the real work so that the emulated cost is a total, not an
  // extra: a route that already costs 50 µs with cost_us = 76 burns only the missing 26 µs.
  const std::uint64_t t0 = cost_us != 0 ? routes::thread_cpu_ns() : 0;

  heavy_output out;
  if (which == route::ssr) {
    // The seed stamps the page inside the task (new Date() on the worker), so do we.
    out.body = routes::render_ssr_page(body, routes::iso8601_ms(clock::now()));
  } else {
    const std::int64_t now_sec =
        std::chrono::duration_cast<std::chrono::seconds>(clock::now().time_since_epoch()).count();
    if (auto json = routes::issue_jwt(body, jwt_secret, now_sec)) {
      out.body = std::move(*json);
    } else {
      // The seed: c.body(responseJson ?? "Bad request", responseJson ? 200 : 400, ...).
      out.status = boost::beast::http::status::bad_request;
      out.body = "Bad request";
    }
  }

  if (cost_us != 0) static_cast<void>(routes::burn_cpu_until(t0, cost_us));
  return out;
}

}  // namespace knit_server

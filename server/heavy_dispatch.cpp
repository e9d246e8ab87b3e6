// The heavy routes' work itself, with the CPU-cost emulation that makes a C++ route cost what a Bun route costs.
#include "heavy_dispatch.hpp"

#include <chrono>

#include "routes/routes.hpp"

namespace knit_server {

queue_state heavy_dispatch::queue() const noexcept {
  const knit::pool& pool = host_->get_pool();
  return {pool.pending(), pool.options().threads, pool.call_time_estimate(), meter_.interval()};
}

std::optional<std::string> heavy_dispatch::auto_json() const {
  if (!auto_) return std::nullopt;
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

void heavy_dispatch::on_completion() noexcept {
  // The pool has already counted this call out of pending() when its handler runs.
  const knit::pool& pool = host_->get_pool();
  meter_.on_completion(service_meter::clock::now(), pool.pending(), pool.options().threads);
}

heavy_output heavy_dispatch::from_error(std::error_code ec) {
  using boost::beast::http::status;
  // A stuck call gets 504, not 503. 503 tells a client the server is overloaded or going
  // away and to retry later (the admission refusals, with Retry-After); a stuck call is
  // neither: the server took the request and its worker, the "upstream" that was to
  // produce the page, did not answer in time (KNIT_STUCK_MS), which is what 504 says. The
  // same request would likely get stuck again, so no Retry-After invites a retry.
  if (ec == knit::errc::stuck) {
    return {status::gateway_timeout,
            "Gateway Timeout: the task was stuck (it ran longer than KNIT_STUCK_MS) and was "
            "abandoned"};
  }
  if (ec == knit::errc::timed_out) {
    return {status::gateway_timeout, "Gateway Timeout: the task ran past its deadline"};
  }
  // Only shutdown's deadline cancels a call here (the server never calls pool::cancel):
  // this server instance is going away, another may answer, so 503 with Retry-After.
  if (ec == knit::errc::cancelled) {
    return {status::service_unavailable,
            "Service Unavailable: the server is stopping and gave up on the task"};
  }
  return failed();
}

heavy_output heavy_job::operator()(std::string&& body) const {
  namespace routes = knit_server::routes;
  using clock = std::chrono::system_clock;

  // Start the CPU clock before the real work so that the emulated cost is a total, not an
  // extra: a route that already costs 50 µs with cost_us = 76 burns only the missing 26 µs.
  // Auto mode's sample reads the same clock, so it measures the total as well.
  const std::uint64_t t0 = cost_us != 0 || measure ? routes::thread_cpu_ns() : 0;

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
  if (measure) out.cpu_ns = routes::thread_cpu_ns() - t0;
  return out;
}

}  // namespace knit_server

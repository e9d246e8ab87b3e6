// The heavy routes' work itself, with the CPU-cost emulation that makes a C++ route cost what a
// Bun route costs.
#include "placement/heavy_job.hpp"

#include <chrono>
#include <exception>
#include <utility>

#include "routes/routes.hpp"

namespace knit_server {

knit::result<heavy_output> run_heavy_job(const heavy_job& job, std::string&& body) noexcept {
  try {
    return knit::result<heavy_output>(job(std::move(body)));
  } catch (...) {
    return knit::result<heavy_output>(knit::make_error_code(knit::errc::task_failed),
                                      std::current_exception());
  }
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
    // The reference server stamps the page inside the task (new Date() on the worker), so do we.
    out.body = routes::render_ssr_page(body, routes::iso8601_ms(clock::now()));
  } else {
    const std::int64_t now_sec =
        std::chrono::duration_cast<std::chrono::seconds>(clock::now().time_since_epoch()).count();
    if (auto json = routes::issue_jwt(body, jwt_secret, now_sec)) {
      out.body = std::move(*json);
    } else {
      // The reference route: c.body(responseJson ?? "Bad request", responseJson ? 200 : 400, ...).
      out.status = boost::beast::http::status::bad_request;
      out.body = "Bad request";
    }
  }

  if (cost_us != 0) static_cast<void>(routes::burn_cpu_until(t0, cost_us));
  if (measure) out.cpu_ns = routes::thread_cpu_ns() - t0;
  return out;
}

}  // namespace knit_server

// Runs the two heavy routes (/ssr, /jwt): inline on the host thread, or moved into a knit pool worker.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <boost/beast/http/status.hpp>
#include <knit/asio.hpp>
#include <knit/knit.hpp>

#include "admission.hpp"
#include "config.hpp"
#include "router.hpp"

namespace knit_server {

// What a heavy route produces: the status and the finished body, moved back to the host.
// A 5xx is the server's own answer (the task failed, was stuck, or was given up at the
// stop deadline): the session sends it as text/plain, and a 503 with Retry-After.
struct heavy_output {
  boost::beast::http::status status = boost::beast::http::status::ok;
  std::string body;
};

// One heavy call, complete except for the request body. It is the task a pool worker runs
// (or the host, inline), so it holds only what the work needs: no pointers into a session.
struct heavy_job {
  route which = route::ssr;
  std::uint32_t cost_us = 0;       // emulated CPU cost on the calling thread; 0 = none
  std::string_view jwt_secret;     // views server_config::jwt_secret, which outlives the pool

  // Does the route's work on the calling thread, then burns CPU until the thread has spent
  // cost_us in total (the real work counts towards it). May throw (std::bad_alloc).
  heavy_output operator()(std::string&& body) const;
};

class heavy_dispatch {
 public:
  // Inline mode: host == nullptr, the work runs inside start(). Pooled mode: `host` must
  // outlive this object. `cfg` must outlive it too (the job views the secret).
  heavy_dispatch(const server_config& cfg, knit::asio_host* host) noexcept
      : host_(host), cfg_(cfg) {}

  bool pooled() const noexcept { return host_ != nullptr; }

  // The pool's load as admission control sees it (calls pending, workers, the pool's
  // estimate of one call's run time, the measured service interval). Pooled mode only;
  // host thread only.
  queue_state queue() const noexcept;

  // Runs route `r` (ssr or jwt) on `body`, which is moved into the job, and calls
  // `done(heavy_output&&)` on the host thread exactly once (a call that fails without a
  // value gets its 5xx from from_error()):
  //   - inline: before start() returns;
  //   - pooled: later, from the io_context, when the worker's result comes back.
  // Returns knit::errc::queue_full (the pool's max_pending is reached) or
  // knit::errc::shut_down, and then `done` is never called: the caller answers 503 itself.
  // `done` must not throw (the pool would terminate): catch inside it.
  template <class Done>
  std::error_code start(route r, std::string&& body, Done&& done);

 private:
  heavy_job job_for(route r) const noexcept {
    return {r, r == route::ssr ? cfg_.ssr_cost_us : cfg_.jwt_cost_us, cfg_.jwt_secret};
  }

  // An internal error as a route answer: the job threw (inline), or the worker's result
  // carried an exception (pooled).
  static heavy_output failed() {
    return {boost::beast::http::status::internal_server_error, "Internal Server Error"};
  }

  // The answer for a pool call that came back without a value (heavy_dispatch.cpp):
  //   errc::stuck, errc::timed_out  504, the task ran too long and was abandoned;
  //   errc::cancelled               503 (+ Retry-After), the server gave up at its stop deadline;
  //   anything else (task_failed)   500, as failed().
  static heavy_output from_error(std::error_code ec);

  // Feeds one completion to meter_ (pooled mode, host thread, from the completion handler).
  void on_completion() noexcept;

  knit::asio_host* host_;
  const server_config& cfg_;
  service_meter meter_;  // completions of the pool's calls, for queue().service_interval
};

template <class Done>
std::error_code heavy_dispatch::start(route r, std::string&& body, Done&& done) {
  const heavy_job job = job_for(r);

  if (!host_) {
    // Inline: the seed's hono_only. The host thread does the work itself, and every other
    // connection waits until it is done: the head-of-line blocking the pool exists to remove.
    heavy_output out;
    try {
      out = job(std::move(body));
    } catch (...) {
      out = failed();
    }
    done(std::move(out));
    return {};
  }

  // Pooled: the body string moves into the call record and from there into the job; the
  // rendered body comes back by move inside the result. Nothing is copied either way.
  // `this` outlives every handler: main() shuts the pool down (every handler called) before
  // dispatch goes out of scope, which the sessions' handlers need of the server as well.
  return host_->submit(
      job, std::move(body),
      [this, done = std::forward<Done>(done)](knit::result<heavy_output> result) mutable {
        on_completion();
        done(result.ok() ? std::move(result.value()) : from_error(result.error()));
      },
      knit::call_options{});
}

}  // namespace knit_server

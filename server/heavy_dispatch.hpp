// Runs the two heavy routes (/ssr, /jwt): inline on the host thread, on a knit pool worker, on a boost::asio::thread_pool, or per route whichever is cheaper (auto).
#pragma once

#include <array>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/http/status.hpp>
#include <knit/asio.hpp>
#include <knit/knit.hpp>

#include "admission.hpp"
#include "config.hpp"
#include "offload_policy.hpp"
#include "router.hpp"

namespace knit_server {

// What a heavy route produces: the status and the finished body, moved back to the host.
// A 5xx is the server's own answer (the task failed, was stuck, or was given up at the
// stop deadline): the session sends it as text/plain, and a 503 with Retry-After.
struct heavy_output {
  boost::beast::http::status status = boost::beast::http::status::ok;
  std::string body;
  std::uint64_t cpu_ns = 0;  // the job's thread CPU time, when the job was asked to measure it
};

// One heavy call, complete except for the request body. It is the task a pool worker runs
// (or the host, inline), so it holds only what the work needs: no pointers into a session.
struct heavy_job {
  route which = route::ssr;
  std::uint32_t cost_us = 0;       // emulated CPU cost on the calling thread; 0 = none
  std::string_view jwt_secret;     // views server_config::jwt_secret, which outlives the pool
  bool measure = false;            // auto mode's sample: put the thread CPU time in cpu_ns

  // Does the route's work on the calling thread, then burns CPU until the thread has spent
  // cost_us in total (the real work counts towards it). May throw (std::bad_alloc).
  heavy_output operator()(std::string&& body) const;
};

class heavy_dispatch {
 public:
  // Inline mode: host == nullptr, the work runs inside start(). Pooled or auto mode (by
  // cfg.mode; auto uses `auto_options`): `host` must outlive this object. `cfg` must
  // outlive it too (the job views the secret).
  heavy_dispatch(const server_config& cfg, knit::asio_host* host,
                 offload_options auto_options = {}) noexcept
      : host_(host),
        cfg_(cfg),
        auto_(host != nullptr && cfg.mode == exec_mode::auto_offload),
        policies_{offload_policy(auto_options.inline_below_us),
                  offload_policy(auto_options.inline_below_us)} {}

  // Asio mode: jobs are posted to `threads`, their results posted back to `io`. Both must
  // outlive every call (main joins `threads` after the loop has ended).
  heavy_dispatch(const server_config& cfg, boost::asio::thread_pool& threads,
                 boost::asio::io_context& io)
      : cfg_(cfg), asio_threads_(&threads), io_(&io) {}

  // True when a knit pool is attached (pooled or auto mode).
  bool pooled() const noexcept { return host_ != nullptr; }

  // True when route r's next call goes to the knit pool: always in pooled mode, in auto
  // mode while r's measured cost is high. Admission control applies to exactly these calls
  // (asio mode has none: the plain thread_pool a user would write has no queue limit).
  bool to_pool(route r) const noexcept {
    return host_ != nullptr && (!auto_ || policy(r).pooled());
  }

  // Auto mode's per-route state for knit-stats:
  //   {"ssr":{"inline":N,"pooled":N,"avg_ns":N},"jwt":{...}}
  // (inline/pooled: calls started on each path; avg_ns: the running average of the
  // measured cost, 0 before the first sample). nullopt in the other modes.
  std::optional<std::string> auto_json() const;

  // The pool's load as admission control sees it (calls pending, workers, the pool's
  // estimate of one call's run time, the measured service interval). Pooled and auto mode
  // only; host thread only.
  queue_state queue() const noexcept;

  // Runs route `r` (ssr or jwt) on `body`, which is moved into the job, and calls
  // `done(heavy_output&&)` on the host thread exactly once (a call that fails without a
  // value gets its 5xx from from_error()):
  //   - inline (and auto while r is cheap): before start() returns;
  //   - pooled (auto while r is costly), asio: later, from the io_context, when the
  //     worker's result comes back.
  // Returns knit::errc::queue_full (the pool's max_pending is reached) or
  // knit::errc::shut_down, and then `done` is never called: the caller answers 503 itself.
  // `done` must not throw (the pool would terminate): catch inside it.
  template <class Done>
  std::error_code start(route r, std::string&& body, Done&& done);

 private:
  heavy_job job_for(route r) const noexcept {
    return {r, r == route::ssr ? cfg_.ssr_cost_us : cfg_.jwt_cost_us, cfg_.jwt_secret};
  }

  offload_policy& policy(route r) noexcept { return policies_[r == route::ssr ? 0 : 1]; }
  const offload_policy& policy(route r) const noexcept {
    return policies_[r == route::ssr ? 0 : 1];
  }

  // An internal error as a route answer: the job threw (inline), or the worker's result
  // carried an exception (pooled).
  static heavy_output failed() {
    return {boost::beast::http::status::internal_server_error, "Internal Server Error"};
  }

  // Runs the job on this thread; an exception becomes failed().
  static heavy_output run_here(const heavy_job& job, std::string&& body) {
    try {
      return job(std::move(body));
    } catch (...) {
      return failed();
    }
  }

  // The answer for a pool call that came back without a value (heavy_dispatch.cpp):
  //   errc::stuck, errc::timed_out  504, the task ran too long and was abandoned;
  //   errc::cancelled               503 (+ Retry-After), the server gave up at its stop deadline;
  //   anything else (task_failed)   500, as failed().
  static heavy_output from_error(std::error_code ec);

  // Feeds one completion to meter_ (pooled mode, host thread, from the completion handler).
  void on_completion() noexcept;

  knit::asio_host* host_ = nullptr;
  const server_config& cfg_;
  bool auto_ = false;                                  // auto mode: policies_ choose the path
  boost::asio::thread_pool* asio_threads_ = nullptr;  // asio mode
  boost::asio::io_context* io_ = nullptr;             // asio mode: where results are posted
  std::array<offload_policy, 2> policies_{                  // auto mode: /ssr, /jwt
      offload_policy(offload_options::kDefaultInlineUs),
      offload_policy(offload_options::kDefaultInlineUs)};
  service_meter meter_;  // completions of the pool's calls, for queue().service_interval
};

template <class Done>
std::error_code heavy_dispatch::start(route r, std::string&& body, Done&& done) {
  heavy_job job = job_for(r);

  if (asio_threads_) {
    // Asio: what a C++ user writes without knit. Post the job to the thread pool; the
    // worker posts the result back to the host's io_context, where `done` runs. Body and
    // result are moved, never copied. Nothing bounds the queue (no admission control), and
    // a job that never returns holds its thread for good (no stuck detection). The session
    // inside `done` is kept alive until the result is back: the server's stop waits for it.
    boost::asio::post(*asio_threads_, [job, io = io_, body = std::move(body),
                                       done = std::forward<Done>(done)]() mutable {
      heavy_output out = run_here(job, std::move(body));
      boost::asio::post(*io, [out = std::move(out), done = std::move(done)]() mutable {
        done(std::move(out));
      });
    });
    return {};
  }

  offload_policy::decision choice{host_ != nullptr, false};
  if (auto_) {
    choice = policy(r).next();
    job.measure = choice.measure;
  }

  if (!choice.pooled) {
    // Inline: the seed's hono_only. The host thread does the work itself, and every other
    // connection waits until it is done: the head-of-line blocking the pool exists to
    // remove, and in auto mode a price worth paying only for a call cheaper than a submit.
    heavy_output out = run_here(job, std::move(body));
    if (choice.measure) policy(r).record(out.cpu_ns);
    done(std::move(out));
    return {};
  }

  // Pooled: the body string moves into the call record and from there into the job; the
  // rendered body comes back by move inside the result. Nothing is copied either way.
  // `this` outlives every handler: main() shuts the pool down (every handler called) before
  // dispatch goes out of scope, which the sessions' handlers need of the server as well.
  return host_->submit(
      job, std::move(body),
      [this, r, measured = choice.measure,
       done = std::forward<Done>(done)](knit::result<heavy_output> result) mutable {
        on_completion();
        if (!result.ok()) return done(from_error(result.error()));
        // The worker's CPU time for the call, fed to the route's average on the host thread.
        if (measured) policy(r).record(result.value().cpu_ns);
        done(std::move(result.value()));
      },
      knit::call_options{});
}

}  // namespace knit_server

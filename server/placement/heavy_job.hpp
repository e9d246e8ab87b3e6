// One heavy call (/ssr or /jwt) as a self-contained task: the route's work plus the emulated CPU
// cost.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <boost/beast/http/status.hpp>
#include <knit/result.hpp>

#include "config.hpp"
#include "http/router.hpp"

namespace knit_server {

// What a heavy route produces: the status (200, or /jwt's 400) and the finished body, moved
// back to the host. The server's own answers (refused, failed, stuck, ...) are not outputs of
// the route: the placement makes them (heavy_outcome.hpp).
struct heavy_output {
  boost::beast::http::status status = boost::beast::http::status::ok;
  std::string body;
  std::uint64_t cpu_ns = 0;  // the job's thread CPU time, when the job was asked to measure it
};

// One heavy call, complete except for the request body. It is the task a pool worker runs
// (or the host, inline), so it holds only what the work needs: no pointers into a session.
struct heavy_job {
  route which = route::ssr;
  std::uint32_t cost_us = 0;    // emulated CPU cost on the calling thread; 0 = none
  std::string_view jwt_secret;  // views server_config::jwt_secret, which outlives the pool
  bool measure = false;         // auto mode's sample: put the thread CPU time in cpu_ns

  // Does the route's work on the calling thread, then burns CPU until the thread has spent
  // cost_us in total (the real work counts towards it). May throw (std::bad_alloc).
  heavy_output operator()(std::string&& body) const;
};

// The job for route `r` (ssr or jwt) under `cfg`, which must outlive it (the secret).
inline heavy_job heavy_job_for(const server_config& cfg, route r) noexcept {
  return {r, r == route::ssr ? cfg.ssr_cost_us : cfg.jwt_cost_us, cfg.jwt_secret};
}

// Runs the job on this thread: its output, or errc::task_failed with the exception it threw
// (std::bad_alloc), as a pool call's result would carry it.
knit::result<heavy_output> run_heavy_job(const heavy_job& job, std::string&& body) noexcept;

}  // namespace knit_server

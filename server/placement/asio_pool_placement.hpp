// KNIT_MODE=asio: the heavy routes on a boost::asio::thread_pool, results posted back: knit's peer.
#pragma once

#include <exception>
#include <optional>
#include <string>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include "config.hpp"
#include "http/router.hpp"
#include "placement/heavy_job.hpp"
#include "placement/heavy_outcome.hpp"

namespace knit_server {

// What a C++ user writes without knit: post the job to a thread pool; the worker posts the
// result back to the host's io_context, where `done` runs. Body and result are moved, never
// copied. Nothing bounds the queue (no admission control: the plain thread_pool a user
// would write has no queue limit), and a job that never returns holds its thread for good
// (no stuck detection). docs/server-modes.md shows the same lines.
class asio_pool_placement {
 public:
  // `threads` and `io` must outlive every call (main joins `threads` after the loop has
  // ended); `cfg` must outlive the placement.
  asio_pool_placement(const server_config& cfg, boost::asio::thread_pool& threads,
                      boost::asio::io_context& io) noexcept
      : cfg_(cfg), threads_(threads), io_(io) {}

  asio_pool_placement(const asio_pool_placement&) = delete;
  asio_pool_placement& operator=(const asio_pool_placement&) = delete;

  // Posts route `r` on `body` to the thread pool; `done(heavy_outcome&&)` runs later on the
  // io_context. The session inside `done` is kept alive until the result is back: the
  // server's stop waits for it. Returns an outcome (failed: 500) only when the post itself
  // cannot allocate; `done` is then never called.
  template <class Done>
  std::optional<heavy_outcome> start(route r, std::string&& body, Done&& done) {
    try {
      boost::asio::post(threads_, [job = heavy_job_for(cfg_, r), io = &io_, body = std::move(body),
                                   done = std::forward<Done>(done)]() mutable {
        heavy_outcome out = heavy_outcome::of(job.which, run_heavy_job(job, std::move(body)));
        boost::asio::post(*io, [out = std::move(out), done = std::move(done)]() mutable {
          done(std::move(out));
        });
      });
    } catch (const std::exception&) {
      return heavy_outcome::failed();
    }
    return std::nullopt;
  }

 private:
  const server_config& cfg_;
  boost::asio::thread_pool& threads_;
  boost::asio::io_context& io_;
};

}  // namespace knit_server

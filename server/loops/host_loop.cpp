// One event loop: its io_context, placement and server, built in that order on its own thread.
#include "loops/host_loop.hpp"

#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

namespace knit_server {

host_loop::host_loop(const host_resources& shared) : io_(shared.io_threads) {
  // Concurrency hint 1 (every mode but multi): only this thread runs io_, so Asio may skip the
  // locking a multi-threaded loop needs.
  const server_config& cfg = shared.cfg;
  if (shared.pool) knit_host_.emplace(io_, *shared.pool);
  // Where /ssr and /jwt run, chosen here once (heavy_placement.hpp).
  switch (cfg.mode) {
    case exec_mode::pooled:
      placement_.emplace(std::in_place_type<pool_placement>, cfg, *knit_host_, shared.err);
      break;
    case exec_mode::auto_offload:
      placement_.emplace(std::in_place_type<auto_placement>, cfg, *knit_host_, shared.auto_options);
      break;
    case exec_mode::asio_pool:
      placement_.emplace(std::in_place_type<asio_pool_placement>, cfg, *shared.asio_threads, io_);
      break;
    case exec_mode::inline_host:
    case exec_mode::multi_thread:
      placement_.emplace(std::in_place_type<inline_placement>, cfg);
      break;
  }
  server_.emplace(io_, cfg, *placement_, shared.limit, shared.budget, shared.status);
  open_ring(cfg);
}

void host_loop::open_ring(const server_config& cfg) {
  // Multi mode's threads share one io_context: only Asio's own run() serves them.
  if (cfg.mode == exec_mode::multi_thread) {
    io_line_ = "io: epoll (multi mode: KNIT_THREADS threads run Asio's own loop)";
    return;
  }
  if (cfg.io == io_backend::epoll) {
    io_line_ = "io: epoll (KNIT_IO=epoll: Asio's reactor)";
    return;
  }
  std::string why_not;
  ring_ = io_ring::open(io_, why_not);
  if (!ring_) {
    if (cfg.io == io_backend::uring) throw std::runtime_error("KNIT_IO=uring: " + why_not);
    io_line_ = "io: epoll (KNIT_IO=auto; no io_uring: " + why_not + ")";
    return;
  }
  server_->use_ring(ring_.get());
  // The pool's completions wake the loop through the ring too, not through Asio's reactor.
  if (knit_host_) {
    ring_->watch_readable(
        knit_host_->hand_over_completion_watch(knit::completion_watch::each_write),
        [](void* host) { static_cast<knit::asio_host*>(host)->completions_ready(); }, &*knit_host_);
  }
  io_line_ =
      std::string(
          "io: io_uring (head reads and response writes through the ring, submitted "
          "together once a turn") +
      (ring_->can_link_sends() ? "; a small keep-alive response linked to the next receive" : "") +
      (knit_host_ ? "; the pool's completions polled there" : "") +
      (ring_->deferred() ? "; SINGLE_ISSUER|DEFER_TASKRUN)"
                         : "; without DEFER_TASKRUN: a kernel before 6.1)");
}

void run_event_loop(boost::asio::io_context& io, log_writer& err) {
  for (;;) {
    try {
      io.run();
      return;
    } catch (const std::exception& e) {
      err.write_line(std::string("knit-server: error in the event loop: ") + e.what());
    }
  }
}

}  // namespace knit_server

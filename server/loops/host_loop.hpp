// One event loop of knit-server: its io_context, where its heavy routes run, and its server
// (listener, sessions, counters). KNIT_HOSTS=H makes H of them.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <knit/asio.hpp>
#include <knit/knit.hpp>

#include "config.hpp"
#include "limits/connection_limit.hpp"
#include "limits/write_budget.hpp"
#include "loops/io_ring.hpp"
#include "loops/process_status.hpp"
#include "loops/server.hpp"
#include "placement/heavy_placement.hpp"
#include "placement/offload_policy.hpp"
#include "telemetry/log_writer.hpp"

namespace knit_server {

// Runs `io` until it is stopped or runs out of work. A handler that throws unwinds out of
// io_context::run(): the error goes to `err` and the loop carries on, so a bug in one request
// cannot take the server down. (Every event loop of the server runs this way: the hosts', the
// control thread's, multi mode's io threads.)
void run_event_loop(boost::asio::io_context& io, log_writer& err);

// What every host shares, owned by main and outliving every host.
struct host_resources {
  const server_config& cfg;
  const offload_options& auto_options;               // auto mode
  knit::pool* pool = nullptr;                        // pooled and auto mode: the one knit pool
  boost::asio::thread_pool* asio_threads = nullptr;  // asio mode: the one thread_pool
  connection_limit& limit;                           // KNIT_MAX_CONNECTIONS, all hosts together
  write_budget& budget;                              // KNIT_MEMORY_BUDGET_MB, all hosts together
  int io_threads = 1;  // threads that run each io_context: 1, or KNIT_THREADS in multi mode
  const process_status* status = nullptr;  // what /livez, /readyz and /metrics report
  log_writer* err = nullptr;  // stderr: a worker process that crashed (KNIT_ISOLATION=process)
};

// Build it on the thread that is to run it, and destroy it there: with a knit pool the
// constructor builds the knit::asio_host, which makes the calling thread one of the pool's
// hosts (its calls' completions come back to this io_context, on this thread), and that host
// goes away with the loop. The heavy routes' placement is made for this loop alone: asio mode
// posts each result back to this io_context, the loop that asked.
class host_loop {
 public:
  // Throws std::runtime_error when KNIT_IO=uring and the kernel refuses the ring.
  explicit host_loop(const host_resources& shared);

  host_loop(const host_loop&) = delete;
  host_loop& operator=(const host_loop&) = delete;

  boost::asio::io_context& io() noexcept { return io_; }
  server& srv() noexcept { return *server_; }
  const heavy_placement& placement() const noexcept { return *placement_; }

  // The stop deadline (stop_deadline.hpp, step 2), on this loop's thread: every pool call of
  // this host still pending gets errc::cancelled now, so each waiting session answers 503
  // (knit::asio_host::give_up). Empty without a pool.
  knit::shutdown_report give_up_pool_calls() {
    return knit_host_ ? knit_host_->give_up() : knit::shutdown_report{};
  }

  // Runs the loop until io() is stopped: through its io_uring (io_ring::run) or Asio's
  // own run() (run_event_loop). Multi mode: every io thread calls this (no ring there).
  void run(log_writer& err) {
    if (ring_) return ring_->run(io_, err);
    run_event_loop(io_, err);
  }

  // The banner's "io:" line: what this loop waits in, and why not io_uring where it is not.
  const std::string& io_line() const noexcept { return io_line_; }

 private:
  void open_ring(const server_config& cfg);

  boost::asio::io_context io_;
  std::optional<knit::asio_host> knit_host_;  // pooled and auto mode
  std::optional<heavy_placement> placement_;
  std::optional<server> server_;
  // KNIT_IO: the loop's io_uring, or null (epoll). After server_: destroyed first, its
  // pending reads and writes cancelled while their sessions' server still exists.
  std::unique_ptr<io_ring> ring_;
  std::string io_line_;
};

}  // namespace knit_server

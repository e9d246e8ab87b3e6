// The event loops' threads: KNIT_HOSTS=H threads, one per event loop, each building its
// host_loop on itself, listening on the shared port (SO_REUSEPORT when H>1) and running the
// loop; the connections it accepts stay on it. KNIT_MODE=multi has one loop, run by
// KNIT_THREADS threads: this one and io_threads - 1 helpers it starts.
//
// A host thread's life:
//   1. start(): builds its host_loop (on itself: with a knit pool, that makes it one of the
//      pool's hosts), listens, starts its helpers (multi mode) and then the accept loop, and
//      hands the bound endpoint, or what it threw, back to the caller, which waits for it;
//   2. accepts and serves until stop() stops its io_context. A work guard keeps the loop
//      running until then, also once its last connection has gone: a result posted to it
//      later (an asio thread_pool job finishing) must still find the loop running;
//   3. joins its helpers, waits for finish(), and only then destroys its host_loop, on
//      itself (with a pool: its host leaves there), and ends.
// Step 3 waits because the process may still end without destructors (the stop deadline
// passed: main calls std::_Exit with sessions that still point into the loop), and because
// the loop's io_context must outlive the asio threads that post to it (main joins them first).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>

#include "loops/host_loop.hpp"
#include "telemetry/log_writer.hpp"

namespace knit_server {

class host_threads {
 public:
  // `shared` and `err` must outlive this object.
  host_threads(const host_resources& shared, log_writer& err) : shared_(shared), err_(err) {}

  host_threads(const host_threads&) = delete;
  host_threads& operator=(const host_threads&) = delete;

  // Stops and finishes the hosts still running (main normally has, or exits without this).
  ~host_threads();

  // Starts the next host's thread (steps 1 and 2) and waits until it listens on HOST:`port`
  // (with SO_REUSEPORT when KNIT_HOSTS>1); returns the bound endpoint (the kernel's port when
  // `port` is 0, for the next hosts to bind). Rethrows what building, listening or starting
  // the helpers threw on that thread (boost::system::system_error when it cannot listen), or
  // std::system_error when the thread cannot be started. The host accepts connections from
  // the moment it returns.
  boost::asio::ip::tcp::endpoint start(std::uint16_t port);

  std::size_t size() const noexcept { return hosts_.size(); }

  // Host i's server (valid until finish()), to be stopped and counted from the control thread.
  server& srv(std::size_t i) noexcept { return hosts_[i]->loop->srv(); }

  // Host i's banner line on what its loop waits in (host_loop::io_line).
  const std::string& io_line(std::size_t i) const noexcept { return hosts_[i]->loop->io_line(); }

  // Runs fn(loop) on host i's loop (posted), for what only that loop's thread may read (its
  // placement's counters). Not run once the loop has stopped.
  void post(std::size_t i, std::function<void(host_loop&)> fn);

  // The stop deadline (stop_deadline.hpp, step 2): posts host_loop::give_up_pool_calls to
  // every host's loop, and hands each one's report to `report` there, on that host's thread.
  void give_up_pool_calls(std::function<void(const knit::shutdown_report&)> report);

  // Stops every host's io_context (step 2 ends). Any thread, but not alongside finish();
  // harmless twice, and after finish().
  void stop() noexcept;

  // Step 3: lets every host destroy its loop, and joins the threads. Call after stop(), once
  // nothing else uses the loops. A second call does nothing.
  void finish();

 private:
  struct host {
    host_loop* loop = nullptr;       // set by the thread once built; owned by the thread's stack
    std::promise<void> may_destroy;  // step 3: set by finish(), the thread waits on its future
    std::thread thread;
  };

  // The thread's body (steps 1 to 3). `listening` and `may_destroy` belong to the thread.
  void run_host(host& h, std::uint16_t port,
                std::promise<boost::asio::ip::tcp::endpoint>& listening,
                std::future<void>& may_destroy);

  const host_resources& shared_;
  log_writer& err_;
  std::vector<std::unique_ptr<host>> hosts_;  // unique_ptr: a thread holds its host's address
  bool finished_ = false;  // finish() has run; read by stop() (the control thread only)
};

}  // namespace knit_server

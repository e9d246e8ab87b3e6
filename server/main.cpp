// knit-server: the reference Hono server on Boost.Beast; /ssr and /jwt run inline, on a knit
// pool, on an asio thread_pool, per route (auto), or on N io threads (multi).
//
// Usage (everything comes from the environment; a bad value exits 2 naming it):
//   PORT=3000 HOST=127.0.0.1 KNIT_MODE=pooled KNIT_THREADS=1 knit-server
//   curl -s localhost:3000/ping
//   curl -s -X POST -d '{"name":"Ari","plan":"pro"}' localhost:3000/ssr
//   curl -s -X POST -d '{"user":{"id":"u_42"}}' localhost:3000/jwt
//   kill -USR1 <pid>    # prints one "knit-stats {json}" line
//   kill -TERM <pid>    # finishes the requests in progress, exits 0 (3: see below)
// Variables: PORT HOST KNIT_MODE=inline|pooled|asio|multi|auto (docs/server-modes.md;
// multi's threading: docs/server-threads.md)
// KNIT_AUTO_INLINE_US (auto: a route runs inline while its average cost is below it, default 6)
// KNIT_COST_PROFILE=bun|native
// KNIT_SSR_COST_US KNIT_JWT_COST_US JWT_SECRET KNIT_MAX_CONNECTIONS KNIT_IDLE_TIMEOUT_MS
// KNIT_MAX_QUEUE_MS KNIT_MAX_QUEUED (admission control, docs/server-safety.md),
// and the pool's own (knit/options.hpp): KNIT_THREADS KNIT_SPIN KNIT_PARK KNIT_DOORBELL
// KNIT_STEAL KNIT_MAX_SPINNERS KNIT_SPIN_GATE KNIT_WORKER_NICE KNIT_WORKER_SCHED
// KNIT_MAX_PENDING ... KNIT_STUCK_MS (default 30000: a call
// running longer is answered 504 and its worker replaced) KNIT_STOP_TIMEOUT_MS (default
// 10000: the most a stop may take, from the signal; 0 = no bound).
//
// Exit codes: 0 stopped (every request answered), 1 cannot start (or a second stop signal),
// 2 bad configuration, 3 the stop timeout passed and something was abandoned: the clients
// still waiting got 503, and stderr has one line naming what was given up.
//
// The steps, in order:
//   1. read the configuration from the environment (bad value: message, exit 2);
//   2. make the host's event loop: one io_context run by this thread only (multi mode: by
//      KNIT_THREADS threads, this one included);
//   3. pooled and auto mode: start the pool (on this thread, which makes it the pool's host)
//      and bind its completions to the io_context; asio mode: start the thread_pool;
//   4. open the signalfd that takes SIGINT/SIGTERM/SIGUSR1 (blocked in every thread from the
//      first line; SIGPIPE is ignored from the very start);
//   5. bind and listen, print the banner, then "listening on ..." (the line scripts wait for);
//   6. run the loop until SIGINT/SIGTERM has drained every connection (SIGUSR1: print stats),
//      or until the stop deadline has given up on what was left (stop_deadline.hpp);
//   7. shut the pool down (drain, bounded by the same deadline), or join the asio threads,
//      exit 0 or 3.
// Every line the server prints once the configuration is read goes through a log_writer:
// a stdout or stderr that nobody reads, or whose reader has gone, loses lines (counted in
// knit-stats "log_dropped") but never stops the event loop or kills the process.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/system/system_error.hpp>
#include <knit/asio.hpp>
#include <knit/knit.hpp>

#include "config.hpp"
#include "heavy_placement.hpp"
#include "log_writer.hpp"
#include "offload_policy.hpp"
#include "server.hpp"
#include "signal_source.hpp"
#include "stats.hpp"
#include "stop_deadline.hpp"

namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace knit_server;

namespace {

constexpr int kExitConfig = 2;     // a bad environment variable
constexpr int kExitStartup = 1;    // cannot listen, cannot start the pool
constexpr int kExitAbandoned = 3;  // the stop timeout passed: pool calls or connections given up

std::string url_of(const tcp::endpoint& ep) {
  const bool v6 = ep.address().is_v6();  // an IPv6 literal goes in brackets in a URL
  std::string url = "http://";
  if (v6) url += '[';
  url += ep.address().to_string();
  if (v6) url += ']';
  url += ':';
  url += std::to_string(ep.port());
  return url;
}

// Each connection is a file descriptor. Raise the soft RLIMIT_NOFILE (often 1024) towards
// KNIT_MAX_CONNECTIONS, so the limit the operator chose is the one that applies, not EMFILE.
void raise_fd_limit(std::size_t max_connections, log_writer& err) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  const rlim_t wanted = static_cast<rlim_t>(max_connections) + 64;  // + listener, eventfd, stdio
  if (limit.rlim_cur >= wanted) return;
  limit.rlim_cur = std::min(wanted, limit.rlim_max);
  ::setrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < wanted) {
    err.write_line(
        "knit-server: warning: the open-file limit is " + std::to_string(limit.rlim_cur) +
        "; connections beyond about " +
        std::to_string(limit.rlim_cur > 64 ? limit.rlim_cur - 64 : 0) +
        " will fail to be accepted (KNIT_MAX_CONNECTIONS=" + std::to_string(max_connections) + ")");
  }
}

void print_banner(const server_config& cfg, const knit::pool* pool, unsigned threads,
                  const offload_options& auto_options, log_writer& out) {
  // The route list exactly as the reference server prints it.
  out.write_line("GET  /ping");
  out.write_line("POST /ssr   body: { name?, plan?, bio?, projects? }");
  out.write_line("POST /jwt   body: { user: { id, email?, role? }, ttlSec? }");
  if (cfg.mode == exec_mode::auto_offload) {
    out.write_line("mode: auto (/ssr and /jwt each inline while its average cost is under " +
                   std::to_string(auto_options.inline_below_us) +
                   " us, else on knit workers) pool: " + pool->describe());
  } else if (pool) {
    out.write_line("mode: pooled (/ssr and /jwt on knit workers) pool: " + pool->describe());
  } else if (cfg.mode == exec_mode::asio_pool) {
    out.write_line("mode: asio (/ssr and /jwt on boost::asio::thread_pool(" +
                   std::to_string(threads) + "), results posted back)");
  } else if (cfg.mode == exec_mode::multi_thread) {
    out.write_line("mode: multi (one io_context run by " + std::to_string(threads) +
                   " threads, every route inline)");
  } else {
    out.write_line("mode: inline (/ssr and /jwt on the host thread, no pool)");
  }
  out.write_line("cost profile: " + cfg.cost_profile + " (ssr " + std::to_string(cfg.ssr_cost_us) +
                 " us, jwt " + std::to_string(cfg.jwt_cost_us) + " us)");
  out.write_line("admission: 503 when the expected wait exceeds " +
                 std::to_string(cfg.max_queue_delay.count()) + " ms or " +
                 std::to_string(cfg.max_queued) + " calls are ahead (0 = off)");
}

}  // namespace

int main() {
  // A write to a pipe or socket whose reader has gone must fail with EPIPE, not kill the
  // server: first thing, before anything can write.
  std::signal(SIGPIPE, SIG_IGN);
  // SIGINT, SIGTERM and SIGUSR1 are blocked in every thread from here on (each thread the
  // server starts inherits this mask) and read from a signalfd by the event loop (step 4).
  signal_source::block_in_this_thread();

  // 1. Configuration. Nothing is bound or started until every value has been checked.
  server_config cfg;
  knit::pool_options pool_options;
  offload_options auto_options;
  try {
    cfg = config_from_process_env();
    // Read in every mode, like the pool's variables: a typo is an error whatever the mode.
    auto_options = offload_options_from_env([](const char* name) -> std::optional<std::string> {
      const char* value = std::getenv(name);
      return value ? std::optional<std::string>(value) : std::nullopt;
    });
    // Read the pool variables in inline mode too: a typo in KNIT_THREADS is an error
    // whichever mode the benchmark happens to be running.
    pool_options = knit::pool_options::from_env();
    // A client that is slow to send or read while stopping gets no longer than the stop
    // itself may take.
    cfg.stop_grace = stop_grace_for(pool_options.stop_timeout);
  } catch (const std::invalid_argument& e) {  // server_config_error and knit::config_error
    std::cerr << "knit-server: " << e.what() << '\n';
    return kExitConfig;
  } catch (const std::exception& e) {
    std::cerr << "knit-server: " << e.what() << '\n';
    return kExitStartup;
  }
  log_writer out(STDOUT_FILENO);
  log_writer err(STDERR_FILENO);
  if (cfg.jwt_secret_generated) {
    err.write_line(
        "knit-server: warning: JWT_SECRET is not set; signing with a random 32-byte "
        "secret for this run only (tokens will not verify after a restart)");
  }

  raise_fd_limit(cfg.max_connections, err);

  // 2. The host's event loop. Concurrency hint 1: only this thread runs it, so Asio may
  //    skip the locking a multi-threaded loop needs. KNIT_MODE=multi: KNIT_THREADS threads
  //    run it (this one and io_threads - 1 more, started in step 6).
  const unsigned io_threads = cfg.mode == exec_mode::multi_thread ? pool_options.threads : 1;
  net::io_context io{static_cast<int>(io_threads)};

  // 3. The pool and its glue, pooled and auto mode. Constructed here, on the thread that
  //    runs io: knit checks that every pool call comes from the thread that created the pool.
  //    Asio mode: KNIT_THREADS plain threads instead, with no knit in between.
  std::optional<knit::pool> pool;
  std::optional<knit::asio_host> host;
  std::optional<net::thread_pool> asio_threads;
  if (cfg.mode == exec_mode::asio_pool) {
    try {
      asio_threads.emplace(pool_options.threads);
    } catch (const std::exception& e) {
      err.write_line(std::string("knit-server: cannot start the thread pool: ") + e.what());
      return kExitStartup;
    }
  }
  if (uses_knit_pool(cfg.mode)) {
    try {
      pool.emplace(pool_options);
    } catch (const std::invalid_argument& e) {
      err.write_line(std::string("knit-server: ") + e.what());
      return kExitConfig;
    } catch (const std::exception& e) {
      err.write_line(std::string("knit-server: cannot start the pool: ") + e.what());
      return kExitStartup;
    }
    host.emplace(io, *pool);
  }
  // Where /ssr and /jwt run, chosen here once (heavy_placement.hpp).
  std::optional<heavy_placement> placement;
  switch (cfg.mode) {
    case exec_mode::pooled:
      placement.emplace(std::in_place_type<pool_placement>, cfg, *host);
      break;
    case exec_mode::auto_offload:
      placement.emplace(std::in_place_type<auto_placement>, cfg, *host, auto_options);
      break;
    case exec_mode::asio_pool:
      placement.emplace(std::in_place_type<asio_pool_placement>, cfg, *asio_threads, io);
      break;
    case exec_mode::inline_host:
    case exec_mode::multi_thread:
      placement.emplace(std::in_place_type<inline_placement>, cfg);
      break;
  }
  server srv(io, cfg, *placement);
  stop_deadline stopper(io, srv, pool ? &*pool : nullptr, pool_options.stop_timeout);

  // 4. Signals, before anything announces the server: a SIGUSR1 or SIGTERM sent as soon as
  //    "listening on" appears must be taken. SIGINT/SIGTERM start the graceful stop
  //    (server.hpp) bounded by KNIT_STOP_TIMEOUT_MS (stop_deadline.hpp); once it is done,
  //    stop the loop. A second one exits at once. SIGUSR1 prints one knit-stats line, which
  //    the benchmark driver reads. They are read from a signalfd (signal_source.hpp: every
  //    thread blocks them from the first line of main), on the stopper's executor (its strand
  //    in multi mode), as its own handlers run.
  std::optional<signal_source> signals;
  try {
    signals.emplace(stopper.executor());
  } catch (const boost::system::system_error& e) {
    err.write_line(std::string("knit-server: cannot take signals: ") + e.what());
    return kExitStartup;
  }
  int stop_requests = 0;
  signals->start([&](int signo) {
    if (signo == SIGUSR1) {
      std::optional<std::string> pool_json;
      if (pool) pool_json = knit::to_json(pool->stats());
      const server_gauges gauges{srv.connections(), srv.buffered_bytes(),
                                 out.dropped() + err.dropped()};
      const std::optional<std::string> auto_json = placement->auto_json();
      out.write_line(format_stats_line(cfg.mode, srv.counters(), srv.rejected(), gauges, pool_json,
                                       auto_json));
    } else if (++stop_requests == 1) {
      err.write_line("knit-server: signal " + std::to_string(signo) +
                     ": stopping; finishing the requests in progress");
      stopper.begin([&] {
        signals->cancel();
        io.stop();
      });
    } else {
      err.write_line("knit-server: second stop signal: exiting without draining");
      std::_Exit(1);
    }
  });

  // 5. Listen, then tell the world.
  tcp::endpoint bound;
  try {
    bound = srv.listen();
  } catch (const boost::system::system_error& e) {
    err.write_line("knit-server: cannot listen on " + cfg.host + ':' + std::to_string(cfg.port) +
                   ": " + e.code().message());
    return kExitStartup;
  }
  srv.start();
  print_banner(cfg, pool ? &*pool : nullptr, pool_options.threads, auto_options, out);
  out.write_line("listening on " + url_of(bound));  // scripts wait for this line

  // 6. Run the loop, on every io thread. A handler that throws unwinds out of run(); report
  // it and carry on, so a bug in one request cannot take the server down. run() returns
  // normally after io.stop().
  const auto run_loop = [&] {
    for (;;) {
      try {
        io.run();
        break;
      } catch (const std::exception& e) {
        err.write_line(std::string("knit-server: error in the event loop: ") + e.what());
      }
    }
  };
  // Multi mode: io_threads - 1 more threads run the loop beside this one.
  std::vector<std::thread> more_threads;
  if (cfg.mode == exec_mode::multi_thread) {
    try {
      for (unsigned i = 1; i < io_threads; ++i) more_threads.emplace_back(run_loop);
    } catch (const std::system_error& e) {
      err.write_line(std::string("knit-server: cannot start the io threads: ") + e.what());
      std::_Exit(kExitStartup);  // threads already running io: no destructor may run
    }
  }
  run_loop();
  for (std::thread& t : more_threads) t.join();

  // 7. The stop gave up at its deadline: the pool is shut down, the clients that waited
  //    on it got 503. Leave at once: a connection or a detached worker thread may still
  //    use what main's destructors would free, so none of them may run. Asio mode has no
  //    way to cancel a job (the clients still waiting on one are cut off at exit): its
  //    threads are told to stop taking jobs, and the process exits without joining them.
  if (stopper.abandoned()) {
    if (asio_threads) asio_threads->stop();
    err.write_line("knit-server: " + stopper.describe() + "; exiting with code " +
                   std::to_string(kExitAbandoned));
    std::_Exit(kExitAbandoned);
  }
  // Drained in time: every accepted call has completed (each one's session was waiting for
  // it), so this only joins the workers, and retires what a stuck call left behind.
  // Asio mode: the same holds (each session waited for its job's result), so the join only
  // waits for the threads to leave the jobs they have just finished.
  if (asio_threads) asio_threads->join();
  knit::shutdown_report report = stopper.report();
  if (pool && !stopper.passed()) {
    report = pool->shutdown(knit::shutdown_mode::drain, stopper.deadline());
  }
  if (report.cancelled_at_deadline + report.abandoned_running > 0) {  // not expected: drained
    err.write_line("knit-server: stopped past the stop timeout: " + report.describe());
    std::_Exit(kExitAbandoned);
  }
  if (report.threads_detached > 0) {
    // Threads still in a stuck task (its client got 504 long ago). The task may use the
    // configuration (the JWT secret) and the process state: exit without destructors.
    err.write_line("knit-server: stopped; " + std::to_string(report.threads_detached) +
                   " worker threads still running a stuck task were left behind");
    std::_Exit(0);
  }
  err.write_line("knit-server: stopped");
  return 0;
}

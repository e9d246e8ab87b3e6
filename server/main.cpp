// knit-server: the reference Hono server on Boost.Beast; /ssr and /jwt run inline, on a knit
// pool, on an asio thread_pool, per route (auto), or on N io threads (multi).
//
// Usage (each setting is a flag or its KNIT_* variable, the flag winning; `knit-server --help`
// lists them by group, `--print-config` shows what is in effect and where it came from, and
// docs/configuration.md is the same table with why some defaults differ from the library's):
//   knit-server --port 3000 --mode pooled --threads 2      # or PORT=3000 KNIT_THREADS=2 ...
//   curl -s localhost:3000/ping
//   curl -s -X POST -d '{"name":"Ari","plan":"pro"}' localhost:3000/ssr
//   curl -s -X POST -d '{"user":{"id":"u_42"}}' localhost:3000/jwt
//   kill -USR1 <pid>    # prints one "knit-stats {json}" line
//   kill -TERM <pid>    # drains (/readyz 503 for KNIT_DRAIN_DELAY_MS), then finishes the
//                       # requests in progress and exits 0 (3: see below)
//
// Exit codes: 0 stopped (every request answered), 1 cannot start (or a second stop signal),
// 2 bad configuration, 3 the stop timeout passed and something was abandoned: the clients
// still waiting got 503, and stderr has one line naming what was given up.
//
// The steps, in order:
//   1. read the configuration: flags, then the environment (server/settings/; a bad value:
//      message, exit 2);
//   2. what every event loop shares: the pool (pooled and auto mode), the thread_pool (asio
//      mode), the connection limit;
//   3. the control loop: this thread's own io_context, for the signals, the stop and its
//      deadline; this thread builds the pool but never submits to it (it takes no host
//      index), and runs no connection, so a signal never waits behind a busy loop;
//   4. open the signalfd that takes SIGINT/SIGTERM/SIGUSR1 (blocked in every thread from the
//      first line; SIGPIPE is ignored from the very start);
//   5. start the KNIT_HOSTS event loops, each on a thread of its own that builds its loop
//      (with a pool: a host of it) and listens on the port (multi mode: the one loop, run by
//      its thread and KNIT_THREADS - 1 helpers), print the banner, then "listening on ..."
//      (the line scripts wait for);
//   6. run the control loop until SIGINT/SIGTERM, after the drain delay
//      (drain_sequence.hpp), has drained every connection of every loop (SIGUSR1: print
//      stats), or until the stop deadline has given up on what was left (stop_deadline.hpp);
//   7. join the asio threads, end the host threads, shut the pool down (drain, bounded by the
//      same deadline), exit 0 or 3.
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
#include <optional>
#include <string>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/system/system_error.hpp>
#include <knit/knit.hpp>

#include "config.hpp"
#include "limits/connection_limit.hpp"
#include "limits/memory_budget.hpp"
#include "limits/write_budget.hpp"
#include "loops/host_loop.hpp"
#include "loops/host_threads.hpp"
#include "loops/process_status.hpp"
#include "loops/server_group.hpp"
#include "ops/banner.hpp"
#include "ops/service_notify.hpp"
#include "placement/offload_policy.hpp"
#include "placement/process_isolation.hpp"
#include "settings/read_settings.hpp"
#include "stop/drain_sequence.hpp"
#include "stop/signal_source.hpp"
#include "stop/stop_deadline.hpp"
#include "telemetry/log_writer.hpp"

namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace knit_server;

namespace {

constexpr int kExitConfig = 2;     // a bad environment variable
constexpr int kExitStartup = 1;    // cannot listen, cannot start the pool
constexpr int kExitAbandoned = 3;  // the stop timeout passed: pool calls or connections given up

// Each connection is a file descriptor. Raise the soft RLIMIT_NOFILE (often 1024) towards
// KNIT_MAX_CONNECTIONS, so the limit the operator chose is the one that applies, not EMFILE.
// Each event loop holds a few descriptors of its own (listener, epoll, eventfd, timerfd).
void raise_fd_limit(std::size_t max_connections, unsigned hosts, log_writer& err) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  // + the pool's eventfds, stdio, the signalfd
  const rlim_t wanted = static_cast<rlim_t>(max_connections) + 64 + rlim_t{4} * hosts;
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

}  // namespace


int main(int argc, char** argv) {
  // KNIT_ISOLATION=process runs /ssr and /jwt in this same binary, re-executed by knit as a
  // worker process: there knit::worker_main serves the calls and never returns. The task is
  // registered in every mode and before anything else, so host and worker agree on it.
  register_heavy_process_task();
  test_hook_worker_start(argc, argv);
  if (knit::worker_main(argc, argv)) return 0;

  // A write to a pipe or socket whose reader has gone must fail with EPIPE, not kill the
  // server: first thing, before anything can write.
  std::signal(SIGPIPE, SIG_IGN);
  // SIGINT, SIGTERM and SIGUSR1 are blocked in every thread from here on (each thread the
  // server starts inherits this mask) and read from a signalfd by the event loop (step 4).
  signal_source::block_in_this_thread();

  // 1. Configuration (server/settings/): each setting from its flag, else its variable, else
  //    its default, every one checked before anything is bound or started. --help, --version
  //    and --print-config answer here and exit 0; a bad value exits 2 naming it.
  startup_settings startup = read_settings(argc, argv);
  if (!startup.settings) return startup.exit_code;
  server_config& cfg = startup.settings->cfg;
  knit::pool_options& pool_options = startup.settings->pool;
  offload_options& auto_options = startup.settings->offload;
  log_writer out(STDOUT_FILENO);
  log_writer err(STDERR_FILENO);
  if (cfg.jwt_secret_generated) {
    err.write_line(
        "knit-server: warning: JWT_SECRET is not set; signing with a random 32-byte "
        "secret for this run only (tokens will not verify after a restart)");
  }

  raise_fd_limit(cfg.max_connections, cfg.hosts, err);

  // 2. What every event loop shares. Asio mode: KNIT_THREADS plain threads, with no knit in
  //    between. Pooled and auto mode: the knit pool (its hosts are bound to it in step 3).
  std::optional<net::thread_pool> asio_threads;
  std::optional<knit::pool> pool;
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
  }
  // KNIT_ISOLATION=process: one worker process per pool worker thread, each started and
  // handshaken here, before anything listens: /readyz cannot say ok before they are up, and
  // a worker that cannot start stops the server with its cause instead of failing the first
  // request a balancer sends.
  std::optional<knit::process_workers> worker_processes;
  if (pool && cfg.worker_isolation == isolation::process) {
    try {
      worker_processes.emplace(*pool);
    } catch (const std::exception& e) {
      err.write_line(std::string("knit-server: cannot start the worker processes: ") + e.what());
      return kExitStartup;
    }
  }
  connection_limit limit(cfg.max_connections);
  // The budget for unfinished writes (memory_budget.hpp, write_budget.hpp), one for every
  // host, with the send-queue cap that the listener's SO_SNDBUF gives each connection.
  const memory_budget budget_size = resolve_memory_budget(
      cfg.memory_budget_mb, cfg.memory_budget_mb ? std::nullopt : process_memory_max());
  const std::size_t kernel_cap =
      kernel_send_cap(cfg.sndbuf_kb, process_tcp_wmem_max(), probe_sndbuf(cfg.sndbuf_kb));
  write_budget budget(budget_size.bytes, kernel_cap,
                      write_budget::cost(kLargestResponseBytes, kernel_cap));
  // What /livez, /readyz and /metrics report (the pool's counters are read on any thread).
  process_status status(cfg.hosts, pool ? &*pool : nullptr);
  // KNIT_MODE=multi: KNIT_THREADS threads run the one io_context (its host thread and
  // io_threads - 1 helpers, host_threads.hpp); every other loop is run by one thread, which
  // lets Asio skip the locking a multi-threaded loop needs (concurrency hint 1).
  const unsigned io_threads = cfg.mode == exec_mode::multi_thread ? pool_options.threads : 1;
  const host_resources shared{
      cfg,   auto_options, pool ? &*pool : nullptr,      asio_threads ? &*asio_threads : nullptr,
      limit, budget,       static_cast<int>(io_threads), &status,
      &err};

  // 3. The control loop, this thread's own, where the signals and the stop run: it runs no
  //    connection, so a signal or the stop deadline never waits behind a busy host. The
  //    KNIT_HOSTS event loops start in step 5, each on a thread of its own (host_threads.hpp).
  //    With a pool, each loop is one of its hosts (knit::asio_host); at the stop deadline each
  //    gives up its own calls on its thread (stop_deadline.hpp); a loop that declares a call
  //    stuck replaces its worker itself (knit/pool_host.hpp, "Stuck calls").
  net::io_context control(1);
  host_threads hosts(shared, err);
  server_group servers;
  stop_deadline stopper(control, servers, pool_options.stop_timeout);
  if (pool) {
    stopper.give_up_on_hosts([&hosts](stop_deadline::report_sink report) {
      hosts.give_up_pool_calls(std::move(report));
    });
  }

  // 4. Signals, before anything announces the server: a SIGUSR1 or SIGTERM sent as soon as
  //    "listening on" appears must be taken. SIGINT/SIGTERM start the graceful stop of every
  //    host (server.hpp) bounded by KNIT_STOP_TIMEOUT_MS (stop_deadline.hpp); once it is
  //    done, stop the loops. A second one exits at once. SIGUSR1 prints one knit-stats line
  //    for the whole process, which the benchmark driver reads. They are read from a signalfd
  //    (signal_source.hpp: every thread blocks them from the first line of main), on the
  //    control loop, where the stopper's own handlers run.
  std::optional<signal_source> signals;
  try {
    signals.emplace(stopper.executor());
  } catch (const boost::system::system_error& e) {
    err.write_line(std::string("knit-server: cannot take signals: ") + e.what());
    return kExitStartup;
  }
  // The drain (drain_sequence.hpp): /readyz 503 at once, then after KNIT_DRAIN_DELAY_MS the
  // stop protocol, bounded by KNIT_STOP_TIMEOUT_MS from there.
  drain_sequence drain(stopper.executor(), status, cfg.drain_delay);
  const auto begin_drain = [&](int signo) {
    // The drain begins here: readiness is off from drain.begin() on, and systemd hears the
    // unit is deactivating (service_notify.hpp).
    notify_stopping();
    if (cfg.drain_delay.count() > 0) {
      err.write_line("knit-server: signal " + std::to_string(signo) + ": draining; /readyz " +
                     "answers 503 for " + std::to_string(cfg.drain_delay.count()) +
                     " ms, then the stop");
    }
    drain.begin([&, signo] {
      err.write_line("knit-server: signal " + std::to_string(signo) +
                     ": stopping; finishing the requests in progress");
      stopper.begin([&] {
        signals->cancel();
        control.stop();
        hosts.stop();
      });
    });
  };
  // SIGUSR1's line: the pool's counters and every server's are read here; auto mode's
  // per-route figures (one loop only) belong to that loop's thread, so they are read there
  // and the line is printed back here.
  const auto print_stats = [&](const std::optional<std::string>& auto_json) {
    std::optional<std::string> pool_json;
    if (pool) pool_json = knit::to_json(pool->stats());
    out.write_line(servers.stats_line(out.dropped() + err.dropped(), pool_json, auto_json));
  };
  int stop_requests = 0;
  signals->start([&](int signo) {
    if (signo == SIGUSR1) {
      if (cfg.mode != exec_mode::auto_offload || cfg.hosts != 1) return print_stats(std::nullopt);
      hosts.post(0, [&](host_loop& loop) {
        net::post(stopper.executor(),
                  [&, json = loop.placement().auto_json()] { print_stats(json); });
      });
    } else if (++stop_requests == 1) {
      begin_drain(signo);
    } else {
      err.write_line("knit-server: second stop signal: exiting without draining");
      std::_Exit(1);
    }
  });

  // 5. Start the event loops, each listening, then tell the world. Loop 0 binds cfg.port
  //    (0: the kernel picks one), the others the port it got; each accepts from the moment
  //    it listens.
  tcp::endpoint bound;
  std::uint16_t port = cfg.port;
  try {
    for (unsigned i = 0; i < cfg.hosts; ++i) {
      const tcp::endpoint got = hosts.start(port);
      servers.add(hosts.srv(i));
      status.add(i, hosts.srv(i));
      if (i == 0) bound = got;
      port = got.port();
    }
  } catch (const std::exception& e) {
    const auto* listen_error = dynamic_cast<const boost::system::system_error*>(&e);
    err.write_line(listen_error
                       ? "knit-server: cannot listen on " + cfg.host + ':' + std::to_string(port) +
                             ": " + listen_error->code().message()
                       : std::string("knit-server: cannot start an event loop: ") + e.what());
    // Hosts already running may hold connections that point into their loops: no
    // destructor may run.
    if (hosts.size() > 0) std::_Exit(kExitStartup);
    return kExitStartup;
  }
  print_banner(cfg, pool ? &*pool : nullptr, pool_options.threads, auto_options, budget,
               budget_size.origin, hosts.io_line(0), out);
  out.write_line("listening on " + url_of(bound));  // scripts wait for this line
  notify_ready();  // systemd (Type=notify): every listener accepts (service_notify.hpp)

  // 6. The loops run on their threads already; this thread runs the control loop until the
  //    stop is done.
  run_event_loop(control, err);

  // 7. The stop gave up at its deadline: each host gave up its pool calls, the clients that
  //    waited on them got 503. Leave at once: a connection or a detached worker thread may still
  //    use what main's destructors would free, so none of them may run (the host threads
  //    wait for a finish() that never comes). Asio mode has no way to cancel a job (the
  //    clients still waiting on one are cut off at exit): its threads are told to stop
  //    taking jobs, and the process exits without joining them.
  if (stopper.abandoned()) {
    if (asio_threads) asio_threads->stop();
    err.write_line("knit-server: " + stopper.describe() + "; exiting with code " +
                   std::to_string(kExitAbandoned));
    std::_Exit(kExitAbandoned);
  }
  // Drained in time: every accepted call has completed (each one's session was waiting for
  // it), so this only joins the workers, and retires what a stuck call left behind.
  // Asio mode: the same holds (each session waited for its job's result), so the join only
  // waits for the threads to leave the jobs they have just finished. It comes before the
  // hosts end: a thread that has just posted a result may still be inside that loop's post.
  if (asio_threads) asio_threads->join();
  // Each host destroys its loop on its own thread (with a pool: its asio_host leaves there).
  hosts.finish();
  // Then this thread, the pool's owner and none of its hosts, shuts it down: every host has
  // left, so this only stops the workers.
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

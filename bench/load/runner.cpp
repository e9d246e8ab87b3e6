// Runs a whole load test: worker threads, a shared start, progress lines, CPU use, merging.
#include "runner.hpp"

#include <sys/resource.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <exception>
#include <iomanip>
#include <memory>
#include <mutex>
#include <ostream>
#include <thread>

#include "clock.hpp"
#include "connection.hpp"
#include "open_loop.hpp"
#include "request.hpp"
#include "worker.hpp"

namespace knit_load {
namespace {

double cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; };
  return secs(ru.ru_utime) + secs(ru.ru_stime);
}

// Connection j of a route goes to worker j % threads, so a route's share on worker t is:
std::uint32_t share(std::uint32_t conns, std::uint32_t threads, std::uint32_t t) {
  return conns / threads + (t < conns % threads ? 1 : 0);
}

}  // namespace

run_result run_load(const load_config& cfg, std::ostream* progress) {
  const endpoint target = resolve_endpoint(cfg.host, cfg.port);
  const nanos duration = static_cast<nanos>(std::llround(cfg.duration_s * kNanosPerSecond));
  const nanos timeout = static_cast<nanos>(cfg.timeout_ms) * kNanosPerMilli;

  std::vector<std::string> requests;
  for (const route_spec& r : cfg.routes) requests.push_back(build_request(r, cfg.host, cfg.port));

  std::vector<std::unique_ptr<load_worker>> workers;
  for (std::uint32_t t = 0; t < cfg.threads; ++t) {
    std::vector<slice_spec> slices;
    for (std::size_t i = 0; i < cfg.routes.size(); ++i) {
      const route_spec& r = cfg.routes[i];
      const std::uint32_t conns = share(r.connections, cfg.threads, t);
      if (conns == 0) continue;
      // Each worker runs its own schedule at its connections' share of the route's rate.
      const double rate = r.rate * conns / r.connections;
      slices.push_back({i, &requests[i], r.method == "HEAD", conns, rate});
    }
    workers.push_back(std::make_unique<load_worker>(target, timeout, slices));
  }

  // Every worker connects first; the last one to arrive opens the window for all.
  nanos t0 = 0;
  double cpu0 = 0;
  std::atomic<bool> started{false};
  std::barrier sync(static_cast<std::ptrdiff_t>(workers.size()), [&]() noexcept {
    cpu0 = cpu_seconds();
    t0 = now_ns();
    started.store(true);
    started.notify_all();
  });
  auto start = [&]() -> nanos {
    sync.arrive_and_wait();
    return t0;  // written by the completion step, which happens-before the release
  };

  std::mutex error_mutex;
  std::exception_ptr error;
  std::vector<std::thread> threads;
  for (auto& w : workers) {
    threads.emplace_back([&, worker = w.get()]() {
      bool arrived = false;
      try {
        worker->run(
            [&]() {
              arrived = true;
              return start();
            },
            duration);
      } catch (...) {
        // A worker that fails before the barrier must still release the others.
        if (!arrived) sync.arrive_and_drop();
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    });
  }

  started.wait(false);
  // Progress goes to stderr-like streams only, once a second, for runs long enough to care.
  if (progress != nullptr && cfg.duration_s >= 3.0) {
    std::vector<std::uint64_t> last(cfg.routes.size(), 0);
    for (int sec = 1; t0 + sec * kNanosPerSecond < t0 + duration; ++sec) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(t0 + sec * kNanosPerSecond - now_ns()));
      std::vector<std::uint64_t> total(cfg.routes.size(), 0);
      for (auto& w : workers) {
        for (auto& s : w->slices())
          total[s->route_index] += s->completed.load(std::memory_order_relaxed);
      }
      *progress << "[knit-load] " << sec << "s";
      for (std::size_t i = 0; i < cfg.routes.size(); ++i) {
        *progress << "  " << cfg.routes[i].name << " " << (total[i] - last[i]) << " rps";
      }
      *progress << std::endl;
      last = total;
    }
  }
  for (auto& th : threads) th.join();
  const double cpu1 = cpu_seconds();
  if (error) std::rethrow_exception(error);

  run_result result;
  result.host = cfg.host;
  result.port = cfg.port;
  result.duration_s = static_cast<double>(duration) / kNanosPerSecond;
  result.threads = cfg.threads;
  result.gen_cpu_s = cpu1 - cpu0;
  for (const route_spec& r : cfg.routes) result.routes.push_back({r, {}, r.rate, 0.0, true});
  for (auto& w : workers) {
    for (auto& s : w->slices()) result.routes[s->route_index].stats.merge(s->stats);
  }
  for (route_result& r : result.routes) {
    if (!r.spec.open_loop()) continue;
    r.achieved_rate = static_cast<double>(r.stats.requests) / result.duration_s;
    r.rate_met = open_loop_rate_met(r.target_rate, r.achieved_rate, r.stats.backlog_at_end);
  }
  return result;
}

}  // namespace knit_load

// knit-process-bench: a thread worker against a process worker (knit/process.hpp), same run,
// same pool: the round trip of one call at a time, for an empty payload and a 64 KiB one,
// with the worker thread spinning when idle (spin_us 50) and parked (spin_us 0); and a burst
// of 64 calls submitted at once. A process call goes from this thread straight to the pool's
// child through the host's ring (no worker thread between), so the pool's spin_us moves only
// the thread rows; the child's own spin is process_options::spin. Prints p50 / p99 / mean in
// microseconds per call and the host thread's CPU per call (what the event loop pays).
//   knit-process-bench [iterations] [process spin µs]
//   (default 20000 iterations, the 64 KiB rows a quarter of it; process_options::spin 20 µs)
#include <poll.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "knit/pool.hpp"
#include "knit/process.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

struct figures {
  double p50_us, p99_us, mean_us;
  double host_cpu_us;  // the calling (host) thread's CPU per call
};

double thread_cpu_us() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

figures summarize(std::vector<double>& us, double host_cpu_us) {
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double v : us) sum += v;
  return {us[us.size() / 2], us[us.size() * 99 / 100], sum / static_cast<double>(us.size()),
          host_cpu_us};
}

// Times `once` (which must finish `calls` calls) `n` times after n/10 warm-up rounds; the
// figures are per call.
figures time_calls(int n, const std::function<void()>& once, int calls = 1) {
  for (int i = 0; i < n / 10; ++i) once();
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(n));
  const double cpu0 = thread_cpu_us();
  for (int i = 0; i < n; ++i) {
    const auto t0 = clock_type::now();
    once();
    us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count() / calls);
  }
  return summarize(us, (thread_cpu_us() - cpu0) / n / calls);
}

// Waits for the pool's pending calls, as a host loop would (poll on its eventfd).
void wait_for(knit::pool& pool, const int& done, int calls) {
  while (done < calls) {
    pollfd fd{pool.completion_fd(), POLLIN, 0};
    ::poll(&fd, 1, 100);
    pool.drain();
  }
}

void row(const std::string& name, std::size_t bytes, const figures& f) {
  std::printf("%-46s %8zu %9.1f %9.1f %9.1f %9.2f\n", name.c_str(), bytes, f.p50_us, f.p99_us,
              f.mean_us, f.host_cpu_us);
}

// `calls` calls of the thread task or of the process task, submitted at once, waited for.
void submit_and_wait(knit::pool& pool, bool process, const std::string& payload, int calls) {
  int done = 0;
  for (int i = 0; i < calls; ++i) {
    auto check = [&](knit::result<std::string> r) {
      if (!r.ok() || r.value().size() != payload.size()) std::abort();
      ++done;
    };
    const std::error_code ec =
        process ? knit::submit_process(pool, "echo", std::string(payload), check)
                : pool.submit([](std::string in) { return in; }, std::string(payload), check);
    if (ec) std::abort();
  }
  wait_for(pool, done, calls);
}

}  // namespace

int main(int argc, char** argv) {
  knit::register_process_task("echo", [](std::string_view in) { return std::string(in); });
  if (knit::worker_main(argc, argv)) return 0;
  const int n = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int spin_us_process = argc > 2 ? std::atoi(argv[2]) : 20;
  if (n < 10 || spin_us_process < 0 || spin_us_process > 1'000'000) {
    std::fprintf(stderr, "usage: knit-process-bench [iterations >= 10] [spin us 0..1000000]\n");
    return 2;
  }
  std::printf("process_options::spin %d us\n", spin_us_process);
  std::printf("%-46s %8s %9s %9s %9s %9s\n", "one pool worker; per call", "bytes", "p50 us",
              "p99 us", "mean us", "host cpu");
  constexpr int kBurst = 64;
  for (const unsigned spin_us : {50U, 0U}) {
    knit::pool_options options;
    options.threads = 1;
    options.spin_us = spin_us;
    options.process.spin = std::chrono::microseconds(spin_us_process);
    knit::pool pool(options);
    const std::string idle = spin_us ? "spinning" : "parked";
    for (std::size_t bytes : {std::size_t{0}, std::size_t{64} << 10}) {
      const int iterations = bytes ? n / 4 : n;
      const std::string payload(bytes, 'p');
      for (const bool process : {false, true}) {
        const std::string kind = process ? "process" : "thread";
        row(kind + " worker, " + idle + ": round trip", bytes,
            time_calls(iterations, [&] { submit_and_wait(pool, process, payload, 1); }));
      }
    }
    for (const bool process : {false, true}) {
      const std::string kind = process ? "process" : "thread";
      row(kind + " worker, " + idle + ": burst of " + std::to_string(kBurst), 0,
          time_calls(
              n / kBurst, [&] { submit_and_wait(pool, process, std::string(), kBurst); }, kBurst));
    }
  }
  return 0;
}

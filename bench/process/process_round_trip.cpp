// knit-process-bench: the round trip of one call, one at a time, on a thread worker against a
// process worker (knit/process.hpp), for an empty payload and a 64 KiB one; and the process
// hop alone (run_process_task on this thread: the eventfd wake, the copies, the child's
// poll). Prints p50 / p99 / mean in microseconds per call.
//   knit-process-bench [iterations]   (default 20000; the 64 KiB rows run a quarter of it)
#include <poll.h>

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
};

figures summarize(std::vector<double>& us) {
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double v : us) sum += v;
  return {us[us.size() / 2], us[us.size() * 99 / 100], sum / static_cast<double>(us.size())};
}

// Times `once` (which must finish one call) `n` times after n/10 warm-up calls.
figures time_calls(int n, const std::function<void()>& once) {
  for (int i = 0; i < n / 10; ++i) once();
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto t0 = clock_type::now();
    once();
    us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - t0).count());
  }
  return summarize(us);
}

// Waits for the pool's one pending call, as a host loop would (poll on its eventfd).
void wait_one(knit::pool& pool, bool& done) {
  while (!done) {
    pollfd fd{pool.completion_fd(), POLLIN, 0};
    ::poll(&fd, 1, 100);
    pool.drain();
  }
}

void row(const char* name, std::size_t bytes, const figures& f) {
  std::printf("%-38s %8zu %9.1f %9.1f %9.1f\n", name, bytes, f.p50_us, f.p99_us, f.mean_us);
}

}  // namespace

int main(int argc, char** argv) {
  knit::register_process_task("echo", [](std::string_view in) { return std::string(in); });
  if (knit::worker_main(argc, argv)) return 0;
  const int n = argc > 1 ? std::atoi(argv[1]) : 20000;
  if (n < 10) {
    std::fprintf(stderr, "usage: knit-process-bench [iterations >= 10]\n");
    return 2;
  }
  knit::pool_options options;
  options.threads = 1;
  knit::pool pool(options);
  std::printf("%-38s %8s %9s %9s %9s\n", "round trip, one call at a time", "bytes", "p50 us",
              "p99 us", "mean us");
  for (std::size_t bytes : {std::size_t{0}, std::size_t{64} << 10}) {
    const int iterations = bytes ? n / 4 : n;
    const std::string payload(bytes, 'p');
    row("thread worker (pool.submit)", bytes, time_calls(iterations, [&] {
          bool done = false;
          (void)pool.submit([](std::string in) { return in; }, std::string(payload),
                            [&](knit::result<std::string> r) {
                              if (!r.ok() || r.value().size() != payload.size()) std::abort();
                              done = true;
                            });
          wait_one(pool, done);
        }));
    row("process worker (submit_process)", bytes, time_calls(iterations, [&] {
          bool done = false;
          (void)knit::submit_process(pool, "echo", std::string(payload),
                                     [&](knit::result<std::string> r) {
                                       if (!r.ok() || r.value().size() != payload.size()) {
                                         std::abort();
                                       }
                                       done = true;
                                     });
          wait_one(pool, done);
        }));
    row("process hop alone (run_process_task)", bytes, time_calls(iterations, [&] {
          if (knit::run_process_task("echo", payload).size() != payload.size()) std::abort();
        }));
  }
  return 0;
}

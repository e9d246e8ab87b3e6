// A host that is not Asio: a plain poll() loop on pool::completion_fd().
//
// The pool's handlers run on the host thread, inside drain(); the loop only has to call
// drain() when the completion fd is readable, or when the earliest deadline has passed.
#include <knit/pool.hpp>

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace {

// Milliseconds poll() may sleep: until the earliest deadline, or forever without one.
int poll_timeout_ms(const knit::pool& pool) {
  const auto next = pool.next_deadline();
  if (!next) return -1;
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(*next - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<std::chrono::milliseconds::rep>(left.count(), 0));
}

}  // namespace

int main() {
  knit::pool pool;  // one worker; this thread is the host
  long long sum = 0;
  for (int i = 1; i <= 100; ++i) {
    std::error_code ec = pool.submit([](int x) { return static_cast<long long>(x) * x; }, i,
                                     [&sum](knit::result<long long> r) { sum += r.value(); });
    if (ec) {
      std::fprintf(stderr, "submit: %s\n", ec.message().c_str());
      return 1;
    }
  }
  while (pool.pending() > 0) {
    pollfd fd{pool.completion_fd(), POLLIN, 0};
    ::poll(&fd, 1, poll_timeout_ms(pool));
    pool.drain();  // runs the handlers of every result that arrived
  }
  std::printf("sum of squares 1..100 = %lld\n", sum);
  return sum == 338350 ? 0 : 1;
}

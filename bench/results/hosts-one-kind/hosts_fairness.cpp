// hosts_fairness: one knit pool of 2 workers and 4 hosts (host 0, the building thread, and 3
// attached knit::pool_host threads), for the figures in README.md next to this file. Only
// knit's public API, so the same source builds against the library before and after a
// change.
//
//   hosts_fairness share SECONDS    every host floods: keeps 128 calls of a 20 µs task in
//                                   flight; prints each host's completions and its share
//   hosts_fairness victim SECONDS   host 0 and hosts 1, 2 flood as above; host 3 sends one
//                                   call at a time and prints its round trip's p50 and p99
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <poll.h>

#include "knit/pool.hpp"
#include "knit/pool_host.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
constexpr int kInFlight = 128;
constexpr auto kTask = std::chrono::microseconds(20);

int burn(int x) {
  const auto until = clock_type::now() + kTask;
  while (clock_type::now() < until) {
  }
  return x;
}

std::atomic<int> ready{0};
std::atomic<bool> start{false};

void wait_for_start() {
  ++ready;
  while (!start.load()) std::this_thread::yield();
}

void wait_readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  ::poll(&p, 1, 10);
}

// Keeps kInFlight calls out until `until`; returns the completions delivered before it.
template <class Host>
long flood(Host& h, clock_type::time_point until) {
  long done = 0, in_flight = 0;
  bool open = true;
  while (open || in_flight > 0) {
    if (clock_type::now() >= until) open = false;
    while (open && in_flight < kInFlight) {
      const std::error_code ec = h.submit(burn, 1, [&](knit::result<int>) {
        --in_flight;
        if (clock_type::now() < until) ++done;
      });
      if (ec) break;
      ++in_flight;
    }
    wait_readable(h.completion_fd());
    h.drain();
  }
  return done;
}

// One call at a time until `until`; the round trips in µs.
std::vector<double> one_at_a_time(knit::pool_host& h, clock_type::time_point until) {
  std::vector<double> us;
  while (clock_type::now() < until) {
    bool back = false;
    const auto sent = clock_type::now();
    if (h.submit(burn, 1, [&](knit::result<int>) { back = true; })) continue;
    while (!back) {
      wait_readable(h.completion_fd());
      h.drain();
    }
    us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - sent).count());
  }
  return us;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "share") != 0 && std::strcmp(argv[1], "victim") != 0)) {
    std::fprintf(stderr, "usage: hosts_fairness share|victim SECONDS\n");
    return 2;
  }
  const bool victim = std::strcmp(argv[1], "victim") == 0;
  const auto seconds = std::chrono::seconds(std::atoi(argv[2]));
  knit::pool_options o;
  o.threads = 2;
  knit::pool p(o);
  long counts[4] = {0, 0, 0, 0};
  std::vector<double> victim_us;
  std::vector<std::thread> attached;
  clock_type::time_point until{};
  std::atomic<long> until_ns{0};
  for (int h = 1; h <= 3; ++h) {
    attached.emplace_back([&, h] {
      knit::pool_host host(p);
      wait_for_start();
      const clock_type::time_point end{clock_type::duration(until_ns.load())};
      if (victim && h == 3) {
        victim_us = one_at_a_time(host, end);
      } else {
        counts[h] = flood(host, end);
      }
    });
  }
  while (ready.load() < 3) std::this_thread::yield();
  until = clock_type::now() + seconds;
  until_ns = until.time_since_epoch().count();
  start = true;
  counts[0] = flood(p, until);
  for (auto& t : attached) t.join();
  if (victim) {
    long flood_total = counts[0] + counts[1] + counts[2];
    std::printf("victim calls %zu p50_us %.1f p99_us %.1f; flooders' completions %ld\n",
                victim_us.size(), percentile(victim_us, 0.50), percentile(victim_us, 0.99),
                flood_total);
  } else {
    const long total = counts[0] + counts[1] + counts[2] + counts[3];
    for (int h = 0; h < 4; ++h) {
      std::printf("host %d completions %ld share %.3f\n", h, counts[h],
                  total ? static_cast<double>(counts[h]) / static_cast<double>(total) : 0.0);
    }
  }
  p.shutdown();
  return 0;
}

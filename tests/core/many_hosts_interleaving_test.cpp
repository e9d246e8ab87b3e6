// Forced interleavings of the many-hosts protocol (src/host_state.hpp): a worker pauses at
// the window a re-check guards (knit/detail/fault_injection.hpp, interleaving_hook) while
// the host acts inside it, every run, instead of a loop that hits the window by luck.
// docs/many-hosts.md names, for each, the line whose removal makes it fail.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "knit/detail/fault_injection.hpp"
#include "knit/pool.hpp"
#include "knit/pool_host.hpp"
#include "support/gate.hpp"
#include "support/host_thread.hpp"

namespace {

using namespace std::chrono_literals;
using knit::detail::interleaving_point;

// The point to pause at once (-1: none), whether a worker is paused there, and the go.
std::atomic<int> armed{-1};
std::atomic<bool> paused{false}, go{false};

void pause_once(interleaving_point where) {
  int want = static_cast<int>(where);
  if (!armed.compare_exchange_strong(want, -1)) return;
  paused = true;
  const auto rescue = std::chrono::steady_clock::now() + 10s;  // a broken test fails, not hangs
  while (!go && std::chrono::steady_clock::now() < rescue) std::this_thread::sleep_for(100us);
}

// Arms one pause at `where` for the test's lifetime.
class pause_at {
 public:
  explicit pause_at(interleaving_point where) {
    paused = false;
    go = false;
    armed = static_cast<int>(where);
    knit::detail::interleaving_hook = pause_once;
  }
  ~pause_at() {
    go = true;
    armed = -1;
    knit::detail::interleaving_hook = nullptr;
  }
  pause_at(const pause_at&) = delete;
  pause_at& operator=(const pause_at&) = delete;
};

knit::pool_options one_parking_worker() {
  knit::pool_options o;
  o.threads = 1;
  o.spin_us = 0;
  o.park_ms = 0;  // a park without a wake never ends: a lost wake-up strands the call
  o.steal = false;
  return o;
}

// Guarantee 1, forced: the worker has found ring(h, w) empty while bit h is still set;
// the host pushes B inside that window, sees the bit set and does not set it. The
// worker's fetch_and, fence and re-check of the ring must set it back, or B waits forever.
TEST(many_hosts_interleaving, ring_runs_dry_while_its_host_pushes) {
  knit::pool p(one_parking_worker());
  knit_test::host_thread t(p, [&](knit::pool_host& h) {
    const pause_at pause(interleaving_point::ring_found_empty);
    bool a = false, b = false;
    // The worker runs A, then finds this host's ring empty with its bit set: it pauses.
    ASSERT_FALSE(h.submit([](int x) { return x; }, 1, [&](knit::result<int>) { a = true; }));
    ASSERT_TRUE(knit_test::eventually([] { return paused.load(); }, 10s));
    ASSERT_FALSE(h.submit([](int x) { return x; }, 2, [&](knit::result<int>) { b = true; }));
    go = true;
    EXPECT_TRUE(knit_test::drain_host_until(
        h, [&] { return a && b; }, 5s))
        << "the call pushed while its ring ran dry was stranded";
  });
}

// Guarantee 2, forced: the worker has claimed nothing and is about to announce its park;
// the host pushes B inside that window, sees the worker running and rings nobody. The
// worker's re-check after its announce must see B, or it parks for good.
TEST(many_hosts_interleaving, worker_parks_while_a_host_pushes_and_sets_its_bit) {
  knit::pool p(one_parking_worker());
  ASSERT_TRUE(knit_test::eventually([&] { return p.stats().workers[0].parks >= 1; }));
  knit_test::host_thread t(p, [&](knit::pool_host& h) {
    const pause_at pause(interleaving_point::before_park);
    bool a = false, b = false;
    // The worker wakes for A, runs it, finds nothing more and pauses before parking.
    ASSERT_FALSE(h.submit([](int x) { return x; }, 1, [&](knit::result<int>) { a = true; }));
    ASSERT_TRUE(knit_test::eventually([] { return paused.load(); }, 10s));
    ASSERT_FALSE(h.submit([](int x) { return x; }, 2, [&](knit::result<int>) { b = true; }));
    go = true;
    EXPECT_TRUE(knit_test::drain_host_until(
        h, [&] { return a && b; }, 5s))
        << "the worker parked past a call pushed as it went to sleep";
  });
}

}  // namespace

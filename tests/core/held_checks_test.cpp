// Held checks with a CPU for every worker (pool_options::wake_at_turn_end; "Held checks"
// in src/host_state.hpp): a host that holds them leaves the fence and the check that a
// worker is awake to the end of its turn, except for a worker whose bit is clear (parked,
// or on its way), which it still rings inside submit(). The window these rules leave (a
// load of the mask, a hint, that saw the bit set before the worker cleared it and parked)
// is forced below at the host's interleaving point between that load and its push;
// held_checks_stress runs it at random with workers that park without a timeout.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "fault_injection.hpp"
#include "knit/pool.hpp"
#include "support/gate.hpp"
#include "support/pin_thread.hpp"
#include "support/pool_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using knit_test::drain_until;
using knit_test::eventually;

class held_checks : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<int> cpus = knit_test::my_cpus();
    if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs: the host's and the worker's";
    pin_.emplace(cpus.front());
    ASSERT_TRUE(pin_->ok());
    knit::pool_options o;
    o.threads = 1;
    o.worker_cpus = {cpus.back()};
    o.wake_at_turn_end = true;
    o.spin_us = 0;  // the worker parks as soon as it finds nothing
    o.park_ms = 0;  // and sleeps until a ringer's CAS: a wake nobody rings never comes
    pool_.emplace(o);
    ASSERT_TRUE(pool_->hold_wakes(true)) << "the building thread holds its checks";
    ASSERT_TRUE(eventually([&] { return parks() >= 1; }));
  }
  std::uint64_t parks() { return pool_->stats().workers.at(0).parks; }

  std::optional<knit_test::pin_host> pin_;
  std::optional<knit::pool> pool_;
};

std::atomic<int> ran{0};
int count_run(int x) {
  ran.fetch_add(1);
  return x;
}

int uncounted(int x) { return x; }

// Submits a call that blocks on `g`, then runs `then`, and waits until the worker is in it.
void start_a_call_held_on(knit::pool& p, const std::shared_ptr<knit_test::gate>& g,
                          int (*then)(int)) {
  ASSERT_FALSE(p.submit(
      [g, then](int x) {
        g->wait();
        return then(x);
      },
      0, [](knit::result<int>) {}));
  ASSERT_TRUE(eventually([&] { return g->waiting.load() == 1; }, 10s));
}

// A parked worker has cleared its bit: the submit finds it clear, sets it and, the fences
// paid, rings at once. Fails if a worker with a CPU of its own waits for the flush as one on
// the host's CPU does (nothing here flushes: the call would never run).
TEST_F(held_checks, a_parked_worker_with_a_cpu_of_its_own_is_woken_inside_submit) {
  knit::pool& p = *pool_;
  ran = 0;
  ASSERT_FALSE(p.submit(count_run, 1, [](knit::result<int>) {}));
  EXPECT_EQ(p.stats().host_wakes, 1u) << "the submit rang the parked worker itself";
  EXPECT_TRUE(eventually([] { return ran.load() == 1; }, 10s))
      << "the call waited for a flush that nobody made";
  ASSERT_TRUE(drain_until(p, [&] { return p.pending() == 0; }));
}

// Calls pushed while the worker runs find its bit set: no check, no wake, and the worker
// takes them when its call returns, with no flush. The drain's flush afterwards finds the
// ring empty and wakes nobody. Fails if the flush checks a seat whose ring is empty (it
// would wake the parked worker for nothing: host_wakes 2).
TEST_F(held_checks, calls_behind_a_running_call_need_no_check_and_an_empty_ring_no_wake) {
  knit::pool& p = *pool_;
  ran = 0;
  auto g = std::make_shared<knit_test::gate>();
  const knit_test::opens_on_exit open_g{g};
  start_a_call_held_on(p, g, count_run);
  ASSERT_FALSE(HasFatalFailure());
  const std::uint64_t wakes = p.stats().host_wakes;
  for (int i = 1; i <= 16; ++i) ASSERT_FALSE(p.submit(count_run, i, [](knit::result<int>) {}));
  EXPECT_EQ(p.stats().host_wakes, wakes) << "a running worker is not rung";
  const std::uint64_t parks_before = parks();
  g->open = true;
  EXPECT_TRUE(eventually([] { return ran.load() == 17; }, 10s))
      << "the running worker did not take the calls pushed behind its call";
  ASSERT_TRUE(eventually([&] { return parks() > parks_before; }, 10s));
  ASSERT_TRUE(drain_until(p, [&] { return p.pending() == 0; }));
  EXPECT_EQ(p.stats().host_wakes, wakes) << "the flush woke a worker whose ring was empty";
}

// The window the hint leaves, forced: the host has loaded its bit (set: the worker is in
// call A) and not pushed B yet; inside it A returns, the worker finds nothing, clears the
// bit and parks for good (park_ms 0). The push then owes the seat its check: B runs only
// because the flush fences, finds the ring not empty and the bit clear, sets it and rings.
// Fails if the flush skips the check (B is never run).
knit_test::gate* gate_at_hint = nullptr;
knit::pool* pool_at_hint = nullptr;

void open_the_gate_and_wait_for_the_park(knit::detail::interleaving_point where) {
  if (where != knit::detail::interleaving_point::host_loaded_mask_hint || !gate_at_hint) return;
  knit_test::gate* g = std::exchange(gate_at_hint, nullptr);
  const std::uint64_t before = pool_at_hint->stats().workers.at(0).parks;
  g->open = true;
  // parks is counted after the park's last re-check: from here the worker sleeps.
  EXPECT_TRUE(eventually([&] { return pool_at_hint->stats().workers.at(0).parks > before; }, 10s));
}

TEST_F(held_checks, a_worker_that_parks_after_the_host_loaded_its_bit_is_rung_by_the_flush) {
  knit::pool& p = *pool_;
  ran = 0;
  auto g = std::make_shared<knit_test::gate>();
  const knit_test::opens_on_exit open_g{g};
  const struct unhooks_on_exit {
    ~unhooks_on_exit() {
      knit::detail::interleaving_hook = nullptr;
      gate_at_hint = nullptr;
    }
  } unhook;
  start_a_call_held_on(p, g, uncounted);
  ASSERT_FALSE(HasFatalFailure());
  const std::uint64_t wakes = p.stats().host_wakes;
  gate_at_hint = g.get();
  pool_at_hint = &p;
  knit::detail::interleaving_hook = open_the_gate_and_wait_for_the_park;
  ASSERT_FALSE(p.submit(count_run, 1, [](knit::result<int>) {}));  // B
  knit::detail::interleaving_hook = nullptr;
  ASSERT_EQ(gate_at_hint, nullptr) << "the host never reached its mask load";
  EXPECT_EQ(p.stats().host_wakes, wakes) << "the stale bit said running: the check is owed";
  EXPECT_EQ(ran.load(), 0) << "the worker is asleep (park_ms 0) until someone rings it";
  p.flush_wakes();
  EXPECT_EQ(p.stats().host_wakes, wakes + 1) << "the flush rang the worker";
  EXPECT_TRUE(eventually([] { return ran.load() == 1; }, 10s))
      << "the flush left the worker asleep with B in its ring";
  ASSERT_TRUE(drain_until(p, [&] { return p.pending() == 0; }));
}

}  // namespace

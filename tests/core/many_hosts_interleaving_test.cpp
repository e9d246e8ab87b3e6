// Forced interleavings of the many-hosts protocol (src/host_state.hpp): a worker pauses at
// the window a re-check guards (src/fault_injection.hpp, interleaving_hook) while
// the host acts inside it, or a host stops at one while a worker acts, every run, instead
// of a loop that hits the window by luck.
// docs/many-hosts.md names, for each, the line whose removal makes it fail.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

#include <poll.h>

#include "fault_injection.hpp"
#include "knit/pool.hpp"
#include "knit/pool_host.hpp"
#include "support/gate.hpp"
#include "support/host_thread.hpp"
#include "support/interleaving_pause.hpp"

namespace {

using namespace std::chrono_literals;
using knit::detail::interleaving_point;

using knit_test::go;
using knit_test::pause_at;
using knit_test::paused;

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

// Host-side windows: the host itself runs `act` at `where` (on its own thread), once per
// time the point is reached, until the action returns false.
std::atomic<int> act_where{-1};
std::atomic<bool (*)()> act_now{nullptr};

void act_at(interleaving_point where) {
  if (act_where.load() != static_cast<int>(where)) return;
  if (!act_now.load()()) act_where = -1;
}

class act_on {
 public:
  act_on(interleaving_point where, bool (*act)()) {
    act_now = act;
    act_where = static_cast<int>(where);
    knit::detail::interleaving_hook = act_at;
  }
  ~act_on() {
    act_where = -1;
    knit::detail::interleaving_hook = nullptr;
  }
  act_on(const act_on&) = delete;
  act_on& operator=(const act_on&) = delete;
};

knit::pool* the_pool = nullptr;
knit_test::gate* gate_a = nullptr;  // the running test's, so that runs never share one
knit_test::gate* gate_b = nullptr;

std::uint64_t parks(const knit::pool& p) {
  std::uint64_t n = 0;
  for (const knit::worker_stats& w : p.stats().workers) n += w.parks;
  return n;
}

// Opens the gates when a test ends early (a failed ASSERT), before its pool or host waits
// for the tasks blocked on them.
struct opens_gates_on_exit {
  ~opens_gates_on_exit() {
    if (gate_a) gate_a->open = true;
    if (gate_b) gate_b->open = true;
  }
};

// Opens `g` and waits until a worker has handed the call back and parked: its completion
// (push, then the host doorbell's check) is over before the host goes on.
void open_and_wait_for_the_completion(knit_test::gate& g) {
  const std::uint64_t before = parks(*the_pool);
  g.open = true;
  const auto rescue = std::chrono::steady_clock::now() + 10s;
  while (parks(*the_pool) == before && std::chrono::steady_clock::now() < rescue) {
    std::this_thread::sleep_for(100us);
  }
}

// The host doorbell (src/host_doorbell.hpp), forced: the host's drain has taken its
// (empty) completion list and is about to go back to sleep on its fd when the worker
// finishes A. Because the host reset its doorbell before it looked, the worker sees it
// unsignalled and writes the eventfd: the sleep ends at once. With the reset after the
// look, the worker's write would be read away and A would wait for good.
TEST(many_hosts_interleaving, host_goes_to_sleep_as_a_completion_lands) {
  knit_test::gate a_gate;
  gate_a = &a_gate;
  gate_b = nullptr;
  knit::pool p(one_parking_worker());
  the_pool = &p;
  const opens_gates_on_exit guard;
  bool a = false;
  ASSERT_FALSE(p.submit(
      [](int x) {
        gate_a->wait();
        return x;
      },
      1, [&](knit::result<int>) { a = true; }));
  ASSERT_TRUE(knit_test::eventually([] { return gate_a->waiting.load() == 1; }, 10s));
  {
    const act_on act(interleaving_point::host_took_completions, [] {
      open_and_wait_for_the_completion(*gate_a);
      return false;  // once
    });
    EXPECT_EQ(p.drain(), 0u);  // A came back only after this drain looked
  }
  pollfd fd{p.completion_fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&fd, 1, 5000), 1) << "the completion landed without waking the host";
  p.drain();
  EXPECT_TRUE(a);
  p.shutdown();
  the_pool = nullptr;
}

// A host leaving with calls out, forced: A is running (its handler pending) and B is
// running with its handler already delivered (timed out), so only the record is out. The
// leave goes to sleep with both out; each time it does, the host lets one finish: A first,
// then B. ~pool_host must return only once A's handler ran here and B's record came back
// (its task destroyed with it), never with a record of this host still out.
TEST(many_hosts_interleaving, a_host_leaving_with_calls_out_waits_for_every_record) {
  knit::pool_options o = one_parking_worker();
  o.threads = 2;
  o.steal = true;
  knit_test::gate a_gate, b_gate;
  gate_a = &a_gate;
  gate_b = &b_gate;
  knit::pool p(o);
  the_pool = &p;
  const opens_gates_on_exit guard;
  const auto destroyed = std::make_shared<std::atomic<int>>(0);
  struct counts_destruction {  // in each task: counts its record's destruction
    std::shared_ptr<std::atomic<int>> n;
    explicit counts_destruction(std::shared_ptr<std::atomic<int>> to) : n(std::move(to)) {}
    counts_destruction(counts_destruction&&) = default;  // the moved-from one counts nothing
    ~counts_destruction() {
      if (n) ++*n;
    }
  };
  std::thread t([&] {
    const std::thread::id me = std::this_thread::get_id();
    bool a_ok = false, a_here = false;
    std::error_code b_error;
    auto h = std::make_unique<knit::pool_host>(p);
    const opens_gates_on_exit guard_here;  // before h leaves, if an ASSERT ends this early
    ASSERT_FALSE(h->submit(
        [keep = counts_destruction{destroyed}](int x) {
          gate_a->wait();
          return x;
        },
        1,
        [&](knit::result<int> r) {
          a_ok = r.ok();
          a_here = std::this_thread::get_id() == me;
        }));
    // B only once A runs: a worker that has taken A but not yet stamped its start looks
    // free to the host (between calls, nothing queued), so B would queue behind A, where
    // nobody takes it while A is held and the other worker sleeps (park_ms = 0). Once A
    // has started, the estimate (no call has finished yet) makes it of unknown length and
    // B goes to the parked worker (dispatch_policy.hpp, rules 2 and 3).
    ASSERT_TRUE(knit_test::eventually([] { return gate_a->waiting.load() == 1; }, 10s));
    knit::call_options soon;
    soon.timeout = 20ms;
    ASSERT_FALSE(h->submit(
        [keep = counts_destruction{destroyed}](int x) {
          gate_b->wait();
          return x;
        },
        2, [&](knit::result<int> r) { b_error = r.error(); }, soon));
    ASSERT_TRUE(knit_test::eventually([] { return gate_b->waiting.load() == 1; }, 10s));
    ASSERT_TRUE(knit_test::drain_host_until(
        *h, [&] { return b_error == knit::errc::timed_out; }, 10s));
    EXPECT_EQ(h->pending(), 1u);  // A's handler; B is out as a record only
    {
      const act_on act(interleaving_point::host_sleeps_with_calls, [] {
        if (!gate_a->open) {
          open_and_wait_for_the_completion(*gate_a);
          return true;  // and again, for B
        }
        open_and_wait_for_the_completion(*gate_b);
        return false;
      });
      h.reset();  // leaves
    }
    EXPECT_TRUE(a_ok && a_here) << "A's handler did not run on its host before it left";
    EXPECT_EQ(destroyed->load(), 2) << "the host left with B's record still out";
  });
  t.join();
  p.shutdown();
  the_pool = nullptr;
}

}  // namespace

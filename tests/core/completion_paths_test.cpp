// The two ways a record comes back to its host (src/host_state.hpp, "Completions"): the
// done ring of the seat whose ring carried it, and the host's list (stolen, lent, or past
// a full done ring). Each test forces one case a single path would get wrong.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "done_ring.hpp"
#include "fault_injection.hpp"
#include "knit/pool.hpp"
#include "knit/pool_host.hpp"
#include "support/gate.hpp"
#include "support/host_thread.hpp"
#include "support/pool_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using knit_test::drain_until;
using knit_test::eventually;

constexpr int kRingSlots = static_cast<int>(knit::detail::done_ring<void*>::kSlots);

std::atomic<int> listed{0};
void count_listed(knit::detail::interleaving_point where) {
  if (where == knit::detail::interleaving_point::completion_listed) listed.fetch_add(1);
}
struct hook_scope {
  hook_scope() {
    listed = 0;
    knit::detail::interleaving_hook = count_listed;
  }
  ~hook_scope() { knit::detail::interleaving_hook = nullptr; }
};

knit::pool_options one_worker() {
  knit::pool_options o;
  o.threads = 1;
  o.steal = false;
  return o;
}

// The host does not drain while its only worker finishes three rings' worth: the first 64
// fill the seat's done ring, the rest go through the list, and the drain delivers every
// one once, in the order they were submitted (the ring first, then the list).
TEST(completion_paths, a_full_done_ring_overflows_into_the_list_and_nothing_is_lost) {
  hook_scope hook;
  knit::pool p(one_worker());
  constexpr int kCalls = 3 * kRingSlots;
  std::atomic<int> ran{0};
  std::vector<int> order;
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_FALSE(p.submit(
        [&ran](int v) {
          ran.fetch_add(1);
          return v;
        },
        i, [&order](knit::result<int> r) { order.push_back(r.ok() ? r.value() : -1); }));
  }
  ASSERT_TRUE(eventually([&] { return ran.load() == kCalls; }));
  EXPECT_TRUE(order.empty()) << "nothing is delivered before the drain";
  EXPECT_EQ(listed.load(), kCalls - kRingSlots) << "one ring's worth fit; the rest were listed";
  ASSERT_TRUE(drain_until(p, [&] { return order.size() == kCalls; }));
  for (int i = 0; i < kCalls; ++i) ASSERT_EQ(order[static_cast<std::size_t>(i)], i);
  // The ring is empty again: the next calls go through it, none listed.
  listed = 0;
  int more = 0;
  for (int i = 0; i < kRingSlots; ++i) {
    ASSERT_FALSE(p.submit([](int v) { return v; }, i, [&more](knit::result<int>) { ++more; }));
  }
  ASSERT_TRUE(drain_until(p, [&] { return more == kRingSlots; }));
  EXPECT_EQ(listed.load(), 0);
}

// A stuck call's worker is replaced: the fresh thread goes on producing into the seat's
// done ring where the old one stopped. A ring whose producer's place lived with the thread
// would start the fresh one at slot 0, which the host does not expect: the call would
// never come back.
TEST(completion_paths, a_replaced_worker_goes_on_in_its_seats_done_ring) {
  auto g = std::make_shared<knit_test::gate>();
  knit::pool_options o = one_worker();
  o.stuck_after = 100ms;
  knit::pool p(o);
  knit_test::opens_on_exit rescue{g};  // after the pool: opens before it waits
  hook_scope hook;
  int before = 0;
  for (int i = 0; i < 5; ++i) {  // through the done ring: its producer's place moves on
    ASSERT_FALSE(p.submit([](int v) { return v; }, i, [&before](knit::result<int>) { ++before; }));
  }
  ASSERT_TRUE(drain_until(p, [&] { return before == 5; }));
  std::optional<std::error_code> stuck_error;
  ASSERT_FALSE(p.submit(
      [g](int) {
        g->wait();
        return 0;
      },
      0, [&](knit::result<int> r) { stuck_error = r.error(); }));
  ASSERT_TRUE(drain_until(p, [&] { return stuck_error.has_value(); }));
  EXPECT_EQ(*stuck_error, knit::errc::stuck);
  int after = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_FALSE(p.submit([](int v) { return v; }, i, [&after](knit::result<int>) { ++after; }));
  }
  ASSERT_TRUE(drain_until(
      p, [&] { return after == 3; }, 10s))
      << "the fresh worker's completions reach the host";
  EXPECT_EQ(listed.load(), 0) << "and through the seat's ring, not the list";
  EXPECT_EQ(p.stats().workers_replaced, 1u);
  g->open = true;  // the retired thread ends, its record freed by the next drain
  ASSERT_TRUE(eventually([&] { return g->returned.load() == 1; }));
}

// A host index taken by a later thread: the new host consumes the seat's done ring where
// the one before stopped.
TEST(completion_paths, a_reused_host_index_goes_on_in_its_done_rings) {
  knit::pool p(one_worker());
  for (int round = 0; round < 3; ++round) {
    int got = 0;
    knit_test::host_thread t(p, [&got](knit::pool_host& h) {
      for (int i = 0; i < 7; ++i) {
        (void)h.submit([](int v) { return v; }, i, [&got](knit::result<int>) { ++got; });
      }
      knit_test::drain_host_until(
          h, [&] { return got == 7; }, 10s);
    });
    t.join();
    EXPECT_EQ(got, 7) << "round " << round;
  }
}

// A call taken by anyone but its seat's worker comes back through the list (the seat's
// done ring has one producer): with the only seat held, a lent worker takes every call
// queued behind it. Through a done ring of their own, the host would never scan it.
TEST(completion_paths, a_lent_workers_calls_come_back_through_the_list) {
  auto g = std::make_shared<knit_test::gate>();
  knit::pool_options o = one_worker();
  o.lend_after = 20ms;
  o.max_lent_workers = 1;
  knit::pool p(o);
  knit_test::opens_on_exit rescue{g};  // after the pool: opens before it waits
  hook_scope hook;
  bool held_done = false;
  ASSERT_FALSE(p.submit(
      [g](int) {
        g->wait();
        return 0;
      },
      0, [&](knit::result<int>) { held_done = true; }));
  ASSERT_TRUE(eventually([&] { return g->waiting.load() == 1; }));
  constexpr int kBehind = 10;
  int got = 0;
  for (int i = 0; i < kBehind; ++i) {
    ASSERT_FALSE(p.submit([](int v) { return v; }, i, [&got](knit::result<int>) { ++got; }));
  }
  ASSERT_TRUE(drain_until(p, [&] { return got == kBehind; }));
  EXPECT_EQ(p.stats().lent.calls_stolen, static_cast<std::uint64_t>(kBehind));
  EXPECT_EQ(listed.load(), kBehind) << "every call the lent worker ran was listed";
  g->open = true;
  ASSERT_TRUE(drain_until(p, [&] { return held_done; }));
  EXPECT_EQ(listed.load(), kBehind) << "the seat's own call came back through its done ring";
}

}  // namespace

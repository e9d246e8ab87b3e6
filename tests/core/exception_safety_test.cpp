// submit() under allocation failure: the test-only failure point
// (src/fault_injection.hpp) fails each allocation site inside submit in turn (call
// record, id-table growth, deadline heap, backlog); every time the caller gets bad_alloc
// and nothing is counted, queued or leaked, and shutdown still ends.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <new>
#include <vector>

#include "fault_injection.hpp"
#include "knit/pool.hpp"
#include "support/counting_value.hpp"
#include "support/gate.hpp"
#include "support/pool_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using knit_test::counting_value;
using knit_test::drain_until;
using knit_test::eventually;
using knit_test::gate;

struct countdown_guard {
  ~countdown_guard() { knit::detail::allocation_countdown = 0; }
};

// Submits one call, failing the nth checked allocation inside it, for n = 1, 2, ... until a
// submit goes through without reaching the failure point (every site has then failed once).
// Returns the number of sites that failed.
int fail_each_site(knit::pool& p, knit::call_options co, std::vector<int>& handled, int& accepted) {
  countdown_guard guard;
  for (int n = 1;; ++n) {
    const auto before = p.stats();
    const std::size_t pending = p.pending();
    const long live = counting_value::live.load();
    knit::detail::allocation_countdown = n;
    const int slot = static_cast<int>(handled.size());
    handled.push_back(0);
    bool threw = false;
    try {
      const auto ec = p.submit([](counting_value v) { return v.value; }, counting_value(5),
                               [&handled, slot](knit::result<std::uint64_t>) {
                                 ++handled[static_cast<std::size_t>(slot)];
                               },
                               co);
      EXPECT_FALSE(ec);
    } catch (const std::bad_alloc&) {
      threw = true;
    }
    if (!threw) {
      EXPECT_GT(knit::detail::allocation_countdown.load(), 0)
          << "the failure point fired but submit did not throw";
      ++accepted;
      return n - 1;
    }
    const auto after = p.stats();
    EXPECT_EQ(p.pending(), pending) << "site " << n;
    EXPECT_EQ(after.calls_submitted, before.calls_submitted) << "site " << n;
    EXPECT_EQ(after.calls_backlogged, before.calls_backlogged) << "site " << n;
    EXPECT_EQ(counting_value::live.load(), live)
        << "site " << n << ": the argument was destroyed, not leaked";
  }
}

TEST(exception_safety, every_allocation_in_submit_can_fail_without_a_trace) {
  const long baseline = counting_value::live.load();
  auto g = std::make_shared<gate>();
  std::vector<int> handled;
  int accepted = 0;
  {
    knit::pool_options o;
    o.threads = 1;
    o.queue_capacity = 1;
    knit::pool p(o);
    // Fresh pool: the record and the id table's first growth.
    const int fresh_sites = fail_each_site(p, {}, handled, accepted);
    EXPECT_GE(fresh_sites, 2);
    ASSERT_TRUE(drain_until(p, [&] { return p.pending() == 0; }));

    // Block the only worker and fill its one-slot ring: later calls go to the backlog.
    int blocked_done = 0;
    ASSERT_FALSE(p.submit(
        [g](int) {
          g->wait();
          return 0;
        },
        0, [&](knit::result<int>) { ++blocked_done; }));
    ASSERT_TRUE(eventually([&] { return g->waiting.load() == 1; }));
    int filler_done = 0;
    ASSERT_FALSE(p.submit([](int x) { return x; }, 0, [&](knit::result<int>) { ++filler_done; }));

    // With a deadline, into the backlog, growing the id table: record, table, deadline
    // heap, backlog.
    knit::call_options co;
    co.timeout = 60s;
    int sites = 0;
    for (int round = 0; round < 40; ++round)
      sites = std::max(sites, fail_each_site(p, co, handled, accepted));
    EXPECT_GE(sites, 4) << "record, id table, deadline heap and backlog each failed once";
    EXPECT_GT(p.stats().calls_backlogged, 0u);

    g->open = true;
    ASSERT_TRUE(drain_until(p, [&] { return p.pending() == 0; }));
    EXPECT_EQ(blocked_done, 1);
    EXPECT_EQ(filler_done, 1);

    // Delivery allocates nothing: with the failure point armed, results still come back.
    countdown_guard guard;
    int late = 0;
    ASSERT_FALSE(p.submit([](int x) { return x; }, 1, [&](knit::result<int>) { ++late; }));
    knit::detail::allocation_countdown = 1;
    ASSERT_TRUE(drain_until(p, [&] { return late == 1; }));
    EXPECT_EQ(knit::detail::allocation_countdown.load(), 1) << "drain reached no failure point";
    knit::detail::allocation_countdown = 0;
    p.shutdown(knit::shutdown_mode::drain);
    EXPECT_EQ(p.stats().calls_submitted, static_cast<std::uint64_t>(accepted + 3));
  }
  int once = 0;
  for (std::size_t i = 0; i < handled.size(); ++i) {
    ASSERT_LE(handled[i], 1) << "call " << i << " delivered twice";
    once += handled[i];
  }
  EXPECT_EQ(once, accepted) << "exactly the accepted calls were delivered";
  EXPECT_EQ(counting_value::live.load(), baseline);
}

}  // namespace

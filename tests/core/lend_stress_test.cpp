// Lending under stress (src/lent_workers.cpp): 3 attached hosts on a pool of one worker
// seat that may lend up to 3 more. Each round every host holds a call on its own gate and
// sends quick calls behind it; with the seat held, those run only on lent workers, and the
// host opens its gate once they are all back. The hosts are out of step, so workers are lent
// while others leave, a host decides while a lent worker is on its way out, and lent
// workers take held calls too. Every call must be delivered exactly once with its own
// value, the counters must count every run once (lent runs included), and at the end every
// lent worker has retired. Run under ThreadSanitizer by `./knit sanitize thread`.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "knit/pool.hpp"
#include "knit/pool_host.hpp"
#include "support/gate.hpp"
#include "support/host_thread.hpp"

namespace {

using namespace std::chrono_literals;

constexpr int scaled(int n) { return n * KNIT_STRESS_SCALE / (KNIT_SANITIZED ? 4 : 1); }

constexpr int kHosts = 3;
constexpr int kQuick = 6;  // quick calls behind each round's held call

// One host's rounds. `hits[i]` counts call i's deliveries (the held call of round r is
// r * (kQuick + 1), its quick calls the next kQuick); `wrong` counts bad values.
void rounds(knit::pool_host& h, int n, std::vector<int>& hits, std::atomic<int>& wrong) {
  constexpr int per = kQuick + 1;
  for (int r = 0; r < n; ++r) {
    auto g = std::make_shared<knit_test::gate>();
    const int base = r * per;
    auto check = [&hits, &wrong](int i) {
      return [&hits, &wrong, i](knit::result<int> res) {
        ++hits[static_cast<std::size_t>(i)];
        if (!res.ok() || res.value() != i) ++wrong;
      };
    };
    ASSERT_FALSE(h.submit(
        [g](int x) {
          g->wait();
          return x;
        },
        base, check(base)));
    for (int q = 1; q <= kQuick; ++q) {
      ASSERT_FALSE(h.submit([](int x) { return x; }, base + q, check(base + q)));
    }
    auto quick_back = [&] {
      for (int q = 1; q <= kQuick; ++q) {
        if (hits[static_cast<std::size_t>(base + q)] == 0) return false;
      }
      return true;
    };
    const bool quick_ok = knit_test::drain_host_until(h, quick_back, 30s);
    g->open = true;  // before any ASSERT ends this body: the pool must see the call return
    ASSERT_TRUE(quick_ok) << "round " << r << ": the calls behind the held one never ran";
    ASSERT_TRUE(knit_test::drain_host_until(
        h, [&] { return hits[static_cast<std::size_t>(base)] != 0; }, 30s))
        << "round " << r;
  }
}

TEST(lend_stress, hosts_lend_and_retire_workers_over_and_over) {
  const int n = scaled(100);
  knit::pool_options o;
  o.threads = 1;
  o.lend_after = 1ms;
  o.max_lent_workers = kHosts;  // the seat and the lent ones always outnumber the held calls
  knit::pool p(o);
  std::vector<std::vector<int>> hits(kHosts,
                                     std::vector<int>(static_cast<std::size_t>(n * (kQuick + 1))));
  std::atomic<int> wrong{0};
  {
    std::vector<std::unique_ptr<knit_test::host_thread>> hosts;
    for (int k = 0; k < kHosts; ++k) {
      hosts.push_back(std::make_unique<knit_test::host_thread>(p, [&, k](knit::pool_host& h) {
        rounds(h, n, hits[static_cast<std::size_t>(k)], wrong);
      }));
    }
  }  // each host joined
  EXPECT_EQ(wrong.load(), 0);
  for (int k = 0; k < kHosts; ++k) {
    for (std::size_t i = 0; i < hits[static_cast<std::size_t>(k)].size(); ++i) {
      ASSERT_EQ(hits[static_cast<std::size_t>(k)][i], 1) << "host " << k << " call " << i;
    }
  }
  const std::uint64_t calls = static_cast<std::uint64_t>(kHosts) * n * (kQuick + 1);
  ASSERT_TRUE(knit_test::eventually([&] {
    const auto s = p.stats();
    return s.lent_workers_now == 0 && s.lent_workers_retired == s.lent_workers_started;
  })) << "a lent worker did not retire once idle";
  const auto s = p.stats();
  EXPECT_GE(s.lent_workers_started, 1u);
  EXPECT_EQ(s.calls_submitted, calls);
  EXPECT_EQ(s.calls_completed, calls);
  EXPECT_EQ(s.totals().calls_run, calls) << "each call ran exactly once, lent runs counted";
  EXPECT_EQ(s.calls_stuck, 0u);
}

}  // namespace

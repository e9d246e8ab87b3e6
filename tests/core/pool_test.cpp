#include "knit/pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "support/counting_value.hpp"
#include "support/pool_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using knit_test::drain_until;

// A gate a task can wait on, opened by the test (with a rescue deadline so nothing hangs).
struct gate {
  std::atomic<bool> open{false};
  std::atomic<int> waiting{0};
  void wait() {
    waiting.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (!open.load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(100us);
  }
};

TEST(pool, call_returns_value_on_the_host_thread) {
  knit::pool p;
  std::optional<int> got;
  std::thread::id ran_on, handled_on;
  ASSERT_FALSE(p.submit(
      [&](int x) {
        ran_on = std::this_thread::get_id();
        return x * 2;
      },
      21,
      [&](knit::result<int> r) {
        handled_on = std::this_thread::get_id();
        got = r.value();
      }));
  EXPECT_FALSE(got) << "the handler never runs inside submit";
  ASSERT_TRUE(drain_until(p, [&] { return got.has_value(); }));
  EXPECT_EQ(*got, 42);
  EXPECT_EQ(handled_on, std::this_thread::get_id());
  EXPECT_NE(ran_on, std::this_thread::get_id());
  EXPECT_EQ(p.pending(), 0u);
}

TEST(pool, argument_and_result_are_moved_not_copied) {
  knit::pool p;
  std::string body(4096, 'x');  // heap buffer: a copy would get a new address
  const char* original = body.data();
  const char* seen_in_task = nullptr;
  const char* seen_in_result = nullptr;
  ASSERT_FALSE(p.submit(
      [&](std::string s) {
        seen_in_task = s.data();
        return s;
      },
      std::move(body), [&](knit::result<std::string> r) { seen_in_result = r.value().data(); }));
  ASSERT_TRUE(drain_until(p, [&] { return seen_in_result != nullptr; }));
  EXPECT_EQ(seen_in_task, original);
  EXPECT_EQ(seen_in_result, original);
}

TEST(pool, move_only_argument_and_void_task) {
  knit::pool p;
  bool done = false;
  int observed = 0;
  ASSERT_FALSE(p.submit([&](std::unique_ptr<int> v) { observed = *v; }, std::make_unique<int>(7),
                        [&](knit::result<knit::unit> r) { done = r.ok(); }));
  ASSERT_TRUE(drain_until(p, [&] { return done; }));
  EXPECT_EQ(observed, 7);
}

TEST(pool, throwing_task_fails_only_its_call_and_the_worker_lives_on) {
  knit::pool p;
  std::optional<knit::result<int>> first;
  std::optional<int> second;
  ASSERT_FALSE(p.submit([](int) -> int { throw std::runtime_error("boom"); }, 1,
                        [&](knit::result<int> r) { first.emplace(std::move(r)); }));
  ASSERT_FALSE(
      p.submit([](int x) { return x + 1; }, 1, [&](knit::result<int> r) { second = r.value(); }));
  ASSERT_TRUE(drain_until(p, [&] { return first && second; }));
  EXPECT_FALSE(first->ok());
  EXPECT_EQ(first->error(), knit::errc::task_failed);
  ASSERT_TRUE(first->exception());
  try {
    first->value();
    FAIL() << "value() must rethrow the task's exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "boom");
  }
  EXPECT_EQ(*second, 2);
  EXPECT_EQ(p.stats().calls_failed, 1u);
}

TEST(pool, deadline_counts_queue_wait_and_the_call_never_runs) {
  knit::pool_options o;
  o.threads = 1;
  knit::pool p(o);
  gate g;
  bool blocker_done = false;
  std::atomic<bool> late_ran{false};
  std::optional<std::error_code> late;
  ASSERT_FALSE(p.submit(
      [&](int) {
        g.wait();
        return 0;
      },
      0, [&](knit::result<int>) { blocker_done = true; }));
  ASSERT_FALSE(p.submit(
      [&](int) {
        late_ran = true;
        return 1;
      },
      0, [&](knit::result<int> r) { late = r.error(); }, knit::call_options{20ms}));
  ASSERT_TRUE(p.next_deadline().has_value());
  ASSERT_TRUE(drain_until(p, [&] { return late.has_value(); }));
  EXPECT_EQ(*late, knit::errc::timed_out);
  g.open = true;
  ASSERT_TRUE(drain_until(p, [&] { return blocker_done; }));
  p.shutdown();
  EXPECT_FALSE(late_ran) << "a call abandoned by its deadline must not run";
  EXPECT_EQ(p.stats().calls_timed_out, 1u);
}

TEST(pool, deadline_of_a_running_call_discards_the_late_result) {
  knit::pool p;
  gate g;
  int calls = 0;
  std::error_code ec;
  ASSERT_FALSE(p.submit(
      [&](int) {
        g.wait();
        return 5;
      },
      0,
      [&](knit::result<int> r) {
        ++calls;
        ec = r.error();
      },
      knit::call_options{20ms}));
  ASSERT_TRUE(drain_until(p, [&] { return calls > 0; }));
  EXPECT_EQ(ec, knit::errc::timed_out);
  g.open = true;
  p.shutdown();  // the late result comes back and is dropped
  EXPECT_EQ(calls, 1) << "exactly one completion, never the late result";
}

TEST(pool, cancel_a_queued_call) {
  knit::pool_options o;
  o.threads = 1;
  knit::pool p(o);
  gate g;
  std::atomic<bool> ran{false};
  std::optional<std::error_code> cancelled;
  bool blocker_done = false;
  knit::call_id blocker = 0, victim = 0;
  ASSERT_FALSE(p.submit(
      [&](int) {
        g.wait();
        return 0;
      },
      0, [&](knit::result<int>) { blocker_done = true; }, {}, &blocker));
  while (g.waiting.load() == 0) std::this_thread::yield();  // the blocker is running
  ASSERT_FALSE(p.submit(
      [&](int) {
        ran = true;
        return 0;
      },
      0, [&](knit::result<int> r) { cancelled = r.error(); }, {}, &victim));
  EXPECT_FALSE(p.cancel(blocker)) << "a running call cannot be cancelled";
  EXPECT_TRUE(p.cancel(victim));
  ASSERT_TRUE(cancelled.has_value()) << "the handler runs before cancel() returns";
  EXPECT_EQ(*cancelled, knit::errc::cancelled);
  EXPECT_FALSE(p.cancel(victim)) << "second cancel of the same call";
  EXPECT_FALSE(p.cancel(0));
  EXPECT_FALSE(p.cancel(12345678901234ull));
  g.open = true;
  ASSERT_TRUE(drain_until(p, [&] { return blocker_done; }));
  p.shutdown();
  EXPECT_FALSE(ran);
}

// A call answered before a worker reaches it (cancelled, or past its deadline while queued
// behind a running one) lets go of its handler's captures at once, on the host thread: a
// connection a handler holds must not stay open until the worker gets to skip the record,
// which may be long after, and wakes no host when it does.
TEST(pool, an_answered_queued_call_releases_its_handler_at_once) {
  knit::pool_options o;
  o.threads = 1;
  knit::pool p(o);
  gate g;
  bool blocker_done = false;
  ASSERT_FALSE(p.submit(
      [&](int) {
        g.wait();
        return 0;
      },
      0, [&](knit::result<int>) { blocker_done = true; }));
  while (g.waiting.load() == 0) std::this_thread::yield();  // the blocker holds the worker
  auto cancelled_token = std::make_shared<int>(1);
  auto timed_out_token = std::make_shared<int>(2);
  knit::call_id victim = 0;
  int answered = 0;
  ASSERT_FALSE(p.submit([](int x) { return x; }, 0,
                        [&answered, t = cancelled_token](knit::result<int>) { ++answered; }, {},
                        &victim));
  knit::call_options short_deadline;
  short_deadline.timeout = 1ms;
  ASSERT_FALSE(p.submit([](int x) { return x; }, 0,
                        [&answered, t = timed_out_token](knit::result<int> r) {
                          EXPECT_EQ(r.error(), knit::errc::timed_out);
                          ++answered;
                        },
                        short_deadline));
  ASSERT_TRUE(p.cancel(victim));
  ASSERT_TRUE(drain_until(p, [&] { return answered == 2; }));
  // Both records still wait in the held worker's ring; their handlers are gone already.
  EXPECT_EQ(cancelled_token.use_count(), 1);
  EXPECT_EQ(timed_out_token.use_count(), 1);
  g.open = true;
  ASSERT_TRUE(drain_until(p, [&] { return blocker_done; }));
}

TEST(pool, queue_full_fails_at_once_without_calling_the_handler) {
  knit::pool_options o;
  o.threads = 1;
  o.max_pending = 2;
  knit::pool p(o);
  gate g;
  int completed = 0, rejected_handler_calls = 0;
  for (int i = 0; i < 2; ++i)
    ASSERT_FALSE(p.submit(
        [&](int) {
          g.wait();
          return 0;
        },
        0, [&](knit::result<int>) { ++completed; }));
  const std::error_code ec =
      p.submit([](int) { return 0; }, 0, [&](knit::result<int>) { ++rejected_handler_calls; });
  EXPECT_EQ(ec, knit::errc::queue_full);
  EXPECT_NE(ec.message().find("max_pending"), std::string::npos);
  g.open = true;
  ASSERT_TRUE(drain_until(p, [&] { return completed == 2; }));
  EXPECT_EQ(rejected_handler_calls, 0);
  EXPECT_FALSE(p.submit([](int) { return 0; }, 0, [&](knit::result<int>) { ++completed; }))
      << "room again";
  ASSERT_TRUE(drain_until(p, [&] { return completed == 3; }));
  EXPECT_EQ(p.stats().calls_rejected, 1u);
}

TEST(pool, full_rings_spill_into_the_backlog_in_order) {
  knit::pool_options o;
  o.threads = 1;
  o.queue_capacity = 1;
  knit::pool p(o);
  std::vector<int> order;
  for (int i = 0; i < 200; ++i) {
    ASSERT_FALSE(p.submit([](int x) { return x; }, i,
                          [&](knit::result<int> r) { order.push_back(r.value()); }));
  }
  ASSERT_TRUE(drain_until(p, [&] { return order.size() == 200; }));
  for (int i = 0; i < 200; ++i)
    ASSERT_EQ(order[static_cast<std::size_t>(i)], i) << "one worker keeps FIFO";
  EXPECT_GT(p.stats().calls_backlogged, 0u);
}

TEST(pool, calls_from_another_thread_are_a_clear_error) {
  knit::pool p;
  std::string message;
  std::thread t([&] {
    try {
      (void)p.submit([](int x) { return x; }, 1, [](knit::result<int>) {});
    } catch (const std::logic_error& e) {
      message = e.what();
    }
  });
  t.join();
  EXPECT_NE(message.find("host thread"), std::string::npos) << message;
}

TEST(pool, shutdown_drain_finishes_everything_then_rejects) {
  knit::pool_options o;
  o.threads = 3;
  knit::pool p(o);
  std::vector<int> seen(500, 0);
  for (int i = 0; i < 500; ++i) {
    ASSERT_FALSE(
        p.submit([](int x) { return x; }, i,
                 [&](knit::result<int> r) { ++seen[static_cast<std::size_t>(r.value())]; }));
  }
  p.shutdown(knit::shutdown_mode::drain);
  for (int n : seen) ASSERT_EQ(n, 1);
  EXPECT_FALSE(p.accepting());
  bool called = false;
  EXPECT_EQ(p.submit([](int x) { return x; }, 1, [&](knit::result<int>) { called = true; }),
            knit::errc::shut_down);
  EXPECT_FALSE(called);
  p.shutdown();  // idempotent
}

TEST(pool, shutdown_cancel_fails_queued_calls_and_finishes_running_ones) {
  knit::pool_options o;
  o.threads = 1;
  knit::pool p(o);
  gate g;
  std::optional<knit::result<int>> running;
  int cancelled = 0, values = 0;
  ASSERT_FALSE(p.submit(
      [&](int) {
        g.wait();
        return 9;
      },
      0, [&](knit::result<int> r) { running.emplace(std::move(r)); }));
  while (g.waiting.load() == 0) std::this_thread::yield();
  std::atomic<bool> a_queued_call_ran{false};
  for (int i = 0; i < 100; ++i) {
    ASSERT_FALSE(p.submit(
        [&](int x) {
          a_queued_call_ran = true;
          return x;
        },
        i,
        [&](knit::result<int> r) {
          if (r.ok()) ++values;
          else if (r.error() == knit::errc::cancelled) ++cancelled;
          if (g.open.exchange(true)) return;
          // The first cancellation opens the gate, so the running call finishes while the
          // shutdown is still answering the queue; then it gives the worker time to take
          // the next queued call. Every queued call must already be cancelled: none may run.
          const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
          while (!a_queued_call_ran && std::chrono::steady_clock::now() < until) {
            std::this_thread::yield();
          }
        }));
  }
  p.shutdown(knit::shutdown_mode::cancel);
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(running->value(), 9) << "the running call finishes normally";
  EXPECT_EQ(cancelled + values, 100) << "every queued call completes exactly once";
  EXPECT_EQ(cancelled, 100) << "queued calls behind a running one are cancelled";
  EXPECT_FALSE(a_queued_call_ran.load());
}

TEST(pool, destructor_drains_pending_calls_and_nothing_leaks) {
  const long before = knit_test::counting_value::live.load();
  int delivered = 0;
  {
    knit::pool_options o;
    o.threads = 2;
    knit::pool p(o);
    for (int i = 0; i < 300; ++i) {
      ASSERT_FALSE(p.submit(
          [](knit_test::counting_value v) { return knit_test::counting_value(v.value + 1); },
          knit_test::counting_value(static_cast<std::uint64_t>(i)),
          [&](knit::result<knit_test::counting_value> r) { delivered += r.ok(); }));
    }
  }
  EXPECT_EQ(delivered, 300);
  EXPECT_EQ(knit_test::counting_value::live.load(), before);
}

// Every option, each in a pool that must still deliver every call exactly once.
struct option_case {
  const char* name;
  knit::pool_options options;
};

class pool_options_matrix : public ::testing::TestWithParam<option_case> {};

TEST_P(pool_options_matrix, every_call_completes_exactly_once) {
  knit::pool p(GetParam().options);
  std::vector<int> seen(2000, 0);
  for (int i = 0; i < 2000; ++i) {
    ASSERT_FALSE(
        p.submit([](int x) { return x; }, i,
                 [&](knit::result<int> r) { ++seen[static_cast<std::size_t>(r.value())]; }));
  }
  ASSERT_TRUE(drain_until(p, [&] { return p.pending() == 0; }));
  for (int n : seen) ASSERT_EQ(n, 1);
  const auto s = p.stats();
  EXPECT_EQ(s.totals().calls_run, 2000u);
  EXPECT_EQ(s.calls_completed, 2000u);
  if (!GetParam().options.steal) {
    EXPECT_EQ(s.totals().calls_stolen, 0u);
  }
  if (!GetParam().options.doorbell) {
    EXPECT_EQ(s.host_wakes, 0u) << "doorbell off: the host never wakes a worker";
    EXPECT_EQ(s.totals().peer_wakes, 0u);
  }
}

knit::pool_options make(unsigned threads, std::optional<unsigned> spin, unsigned park,
                        bool doorbell, bool steal, unsigned max_spinners = 0,
                        std::size_t capacity = 1024) {
  knit::pool_options o;
  o.threads = threads;
  o.spin_us = spin;
  o.park_ms = park;
  o.doorbell = doorbell;
  o.steal = steal;
  o.max_spinners = max_spinners;
  o.queue_capacity = capacity;
  return o;
}

INSTANTIATE_TEST_SUITE_P(
    options, pool_options_matrix,
    ::testing::Values(option_case{"default_1", make(1, std::nullopt, 0, true, true)},
                      option_case{"default_4", make(4, std::nullopt, 0, true, true)},
                      option_case{"old_default_2", make(2, 100, 1, true, true)},
                      option_case{"no_doorbell", make(2, 0, 1, false, true)},
                      option_case{"no_steal", make(3, 0, 0, true, false)},
                      option_case{"single_spinner", make(4, 50, 0, true, true, 1)},
                      option_case{"tiny_rings", make(3, 0, 0, true, true, 0, 1)},
                      option_case{"pinned",
                                  [] {
                                    auto o = make(2, 0, 0, true, true);
                                    o.worker_cpus = {0};
                                    return o;
                                  }()}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(pool, nothing_queues_behind_a_call_of_unknown_length) {
  // Consider: a worker is stuck in a long call and a peer is parked. A call must not
  // wait behind the stuck one: dispatch only queues behind a busy worker expected to be
  // free sooner than a wake-up, and a call running longer than the estimate is unknown.
  knit::pool_options o;
  o.threads = 2;
  knit::pool p(o);
  gate g;
  bool blocker_done = false;
  int quick_done = 0;
  ASSERT_FALSE(p.submit(
      [&](int) {
        g.wait();
        return 0;
      },
      0, [&](knit::result<int>) { blocker_done = true; }));
  while (g.waiting.load() == 0) std::this_thread::yield();
  for (int i = 0; i < 5; ++i)
    ASSERT_FALSE(p.submit([](int x) { return x; }, i, [&](knit::result<int>) { ++quick_done; }));
  const bool finished_while_blocked = drain_until(
      p, [&] { return quick_done == 5; }, 10s);
  g.open = true;  // rescue: never leave the blocker waiting, whatever happened
  ASSERT_TRUE(drain_until(p, [&] { return blocker_done && quick_done == 5; }));
  EXPECT_TRUE(finished_while_blocked)
      << "queued calls waited for the blocked worker: " << knit::to_json(p.stats());
}

class steal_flag : public ::testing::TestWithParam<bool> {};

TEST_P(steal_flag, a_burst_on_one_worker_is_spread_by_stealing) {
  // A burst lands on one worker (expected to be free sooner than a wake-up takes). When it
  // claims a call and sees more queued, it wakes its peer, which steals; with stealing off
  // the peer cannot help and nothing is stolen. The burst's second call holds its worker
  // on a gate until the others are done (stealing on), so no timing decides whether the
  // peer got to them before the worker did.
  knit::pool_options o;
  o.threads = 2;
  o.steal = GetParam();
  o.wake_cost_us = 1'000'000;  // make "queue behind" always look cheaper than a wake-up
  knit::pool p(o);
  // Warm the host's estimate of a call's duration (about 45 ms after ten 60 ms calls). With
  // the estimate at zero, a worker that has already started the burst's first call runs a
  // call "of unknown length", so the host would spread the burst itself and nothing would
  // be left to steal. The estimate is also the time the burst has to be submitted in.
  int warm = 0;
  for (int i = 0; i < 10; ++i) {
    ASSERT_FALSE(p.submit(
        [](int x) {
          std::this_thread::sleep_for(60ms);
          return x;
        },
        i, [&](knit::result<int>) { ++warm; }));
    ASSERT_TRUE(drain_until(p, [&] { return warm == i + 1; }));
  }
  // Whichever worker takes the first call (awake, or the first parked one), the host now
  // expects it to reach each next call sooner than a wake-up (wake_cost_us above), so the
  // whole burst queues on it.
  const auto before = p.stats().totals();
  gate g;
  int done = 0;
  // Call 0 keeps its worker 30 ms, long enough for the rest of the burst to queue behind
  // it; call 1 holds it on the gate. Claiming call 1, the worker sees 2..5 queued and
  // wakes its peer, which can only run them by stealing.
  ASSERT_FALSE(p.submit(
      [](int x) {
        std::this_thread::sleep_for(30ms);
        return x;
      },
      0, [&](knit::result<int>) { ++done; }));
  ASSERT_FALSE(p.submit(
      [&](int x) {
        g.wait();
        return x;
      },
      1, [&](knit::result<int>) { ++done; }));
  for (int i = 2; i < 6; ++i) {
    ASSERT_FALSE(p.submit([](int x) { return x; }, i, [&](knit::result<int>) { ++done; }));
  }
  if (GetParam()) {
    // The four queued behind the held call finish while it is held: the peer stole them.
    const bool spread = drain_until(p, [&] { return done == 5; });
    g.open = true;
    ASSERT_TRUE(spread) << "the burst waited behind the held worker: " << knit::to_json(p.stats());
  } else {
    g.open = true;
  }
  ASSERT_TRUE(drain_until(p, [&] { return done == 6; }));
  auto s = p.stats().totals();
  s.calls_run -= before.calls_run;
  s.calls_stolen -= before.calls_stolen;
  EXPECT_EQ(s.calls_run, 6u);
  if (GetParam()) {
    EXPECT_GE(s.calls_stolen, 1u) << knit::to_json(p.stats());
  } else {
    EXPECT_EQ(s.calls_stolen, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(on_off, steal_flag, ::testing::Bool());

TEST(pool, worker_cpus_pins_every_worker) {
  knit::pool_options o;
  o.threads = 3;
  o.worker_cpus = {0};
  knit::pool p(o);
  bool done = false;
  ASSERT_FALSE(p.submit([](int x) { return x; }, 1, [&](knit::result<int>) { done = true; }));
  ASSERT_TRUE(drain_until(p, [&] { return done; }));
  // One call done does not mean every worker has named and pinned itself yet (a loaded
  // machine may not have run the others): read /proc until all three are, bounded.
  auto pinned_workers = [] {
    int pinned = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
      std::string comm;
      std::getline(std::ifstream(entry.path() / "comm"), comm);
      if (comm.rfind("knit-worker-", 0) != 0) continue;
      std::ifstream status(entry.path() / "status");
      std::string line;
      while (std::getline(status, line)) {
        if (line.rfind("Cpus_allowed_list:", 0) == 0 &&
            line.substr(line.find_first_not_of(" \t", 18)) == "0") {
          ++pinned;
        }
      }
    }
    return pinned;
  };
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int pinned = pinned_workers();
  while (pinned < 3 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    pinned = pinned_workers();
  }
  EXPECT_EQ(pinned, 3);
}

TEST(pool, describe_names_the_effective_policy) {
  knit::pool_options o;
  o.threads = 2;
  knit::pool p(o);
  const std::string d = p.describe();
  EXPECT_NE(d.find("threads=2"), std::string::npos) << d;
  EXPECT_NE(d.find("spin_us=0"), std::string::npos) << d;
}

TEST(pool, stats_json_carries_totals_and_workers) {
  knit::pool_options o;
  o.threads = 2;
  knit::pool p(o);
  bool done = false;
  ASSERT_FALSE(p.submit([](int x) { return x; }, 1, [&](knit::result<int>) { done = true; }));
  ASSERT_TRUE(drain_until(p, [&] { return done; }));
  const std::string j = knit::to_json(p.stats());
  EXPECT_NE(j.find("\"threads\":2"), std::string::npos) << j;
  EXPECT_NE(j.find("\"calls_submitted\":1"), std::string::npos) << j;
  EXPECT_NE(j.find("\"calls_run\":1"), std::string::npos) << j;
  EXPECT_NE(j.find("\"workers\":[{"), std::string::npos) << j;
}

}  // namespace

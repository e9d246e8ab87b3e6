// Held wakes (pool_options::wake_at_turn_end; "Held checks" in src/host_state.hpp): on a
// host whose worker shares its CPU, submit() leaves a parked worker asleep and the host
// rings it at the end of its turn: flush_wakes(), the end of every drain, the shutdown,
// hold_wakes(false), and knit::asio_host's one posted flush per turn. Each test below fails
// if the flush it names is taken out (the owed call then never runs: a bounded wait fails).
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "knit/asio_host.hpp"
#include "knit/pool.hpp"
#include "knit/pool_host.hpp"
#include "support/gate.hpp"
#include "support/pin_thread.hpp"
#include "support/pool_helpers.hpp"

namespace {

using knit_test::drain_until;
using knit_test::eventually;
using knit_test::my_cpus;
using knit_test::pin_host;
namespace asio = boost::asio;

int plus_one(int x) { return x + 1; }

// One worker pinned to the host's single CPU, wakes held at the turn's end.
knit::pool_options shared_cpu_options(int cpu) {
  knit::pool_options o;
  o.threads = 1;
  o.worker_cpus = {cpu};
  o.wake_at_turn_end = true;
  return o;
}

// Waits (bounded) until the pool's one worker has parked `parks` times: with park_ms 0 it
// then sleeps until a ringer's CAS, so the next wake is counted in host_wakes.
bool worker_parked(knit::pool& p, std::uint64_t parks = 1) {
  return eventually([&] { return p.stats().workers.at(0).parks >= parks; });
}

// The host's completion fd turns readable within `limit`, with nobody flushing meanwhile.
bool readable_within(const knit::pool& p, std::chrono::milliseconds limit) {
  pollfd fd{p.completion_fd(), POLLIN, 0};
  return ::poll(&fd, 1, static_cast<int>(limit.count())) == 1;
}

class held_wakes : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<int> cpus = my_cpus();
    ASSERT_FALSE(cpus.empty());
    cpu_ = cpus.back();
    pin_.emplace(cpu_);
    ASSERT_TRUE(pin_->ok());
  }
  // A pool of one worker on this CPU, this thread attached to it, wakes held, and the
  // worker asleep with nothing to do (so the next wake is counted in host_wakes).
  knit::pool& held_pool_with_its_worker_asleep() {
    pool_.emplace(shared_cpu_options(cpu_));
    attached_.emplace(*pool_);
    EXPECT_TRUE(pool_->hold_wakes(true)) << "host and worker share one CPU: wakes are held";
    EXPECT_TRUE(worker_parked(*pool_));
    return *pool_;
  }
  int cpu_ = 0;
  std::optional<pin_host> pin_;
  std::optional<knit::pool> pool_;
  std::optional<knit::pool_host> attached_;
};

TEST_F(held_wakes, a_parked_worker_is_woken_at_the_flush_not_inside_submit) {
  knit::pool& p = held_pool_with_its_worker_asleep();
  ASSERT_FALSE(HasFailure());
  int got = 0;
  ASSERT_FALSE(p.submit(plus_one, 1, [&](knit::result<int> r) { got = r.value(); }));
  EXPECT_EQ(p.stats().host_wakes, 0u) << "the submit owes the wake, it does not ring it";
  EXPECT_EQ(p.stats().calls_completed, 0u);
  EXPECT_FALSE(readable_within(p, std::chrono::milliseconds(50)))
      << "a held wake leaves the worker asleep: nothing completes before the flush";
  p.flush_wakes();
  EXPECT_EQ(p.stats().host_wakes, 1u) << "the flush rings the parked worker once";
  ASSERT_TRUE(drain_until(p, [&] { return got == 2; }));
}

TEST_F(held_wakes, one_wake_rings_for_every_call_of_the_turn) {
  knit::pool& p = held_pool_with_its_worker_asleep();
  ASSERT_FALSE(HasFailure());
  ASSERT_FALSE(p.submit(plus_one, 0, [](knit::result<int>) {}));
  p.flush_wakes();
  ASSERT_TRUE(drain_until(p, [&] { return p.pending() == 0; }));
  ASSERT_TRUE(worker_parked(p, 2));  // asleep again after the first call
  const std::uint64_t wakes = p.stats().host_wakes;
  int done = 0;
  for (int i = 0; i < 32; ++i) {
    ASSERT_FALSE(p.submit(plus_one, i, [&](knit::result<int> r) { done += r.ok(); }));
  }
  EXPECT_EQ(p.stats().host_wakes, wakes) << "32 submits, no wake yet";
  p.flush_wakes();
  p.flush_wakes();  // nothing owed any more: no second wake
  EXPECT_EQ(p.stats().host_wakes, wakes + 1);
  ASSERT_TRUE(drain_until(p, [&] { return done == 32; }));
}

TEST_F(held_wakes, a_drain_rings_what_its_handlers_submitted) {
  knit::pool& p = held_pool_with_its_worker_asleep();
  ASSERT_FALSE(HasFailure());
  int second = 0;
  bool first = false;
  ASSERT_FALSE(p.submit(plus_one, 1, [&](knit::result<int> r) {
    first = r.ok();
    // Submitted inside the drain: owed until the drain ends.
    EXPECT_FALSE(p.submit(plus_one, 10, [&](knit::result<int> s) { second = s.value(); }));
  }));
  p.flush_wakes();
  ASSERT_TRUE(readable_within(p, std::chrono::seconds(30)));
  ASSERT_TRUE(worker_parked(p, 2));  // the first call is done and the worker asleep again
  EXPECT_EQ(p.drain(), 1u);
  ASSERT_TRUE(first);
  // Nobody flushes from here: only the end of that drain can have rung for the second call.
  ASSERT_TRUE(readable_within(p, std::chrono::seconds(30)))
      << "the drain's handler submitted a call and the drain did not ring its worker";
  ASSERT_TRUE(drain_until(p, [&] { return second == 11; }));
}

TEST_F(held_wakes, the_shutdown_rings_a_wake_still_owed) {
  knit::pool& p = held_pool_with_its_worker_asleep();
  ASSERT_FALSE(HasFailure());
  int got = 0;
  ASSERT_FALSE(p.submit(plus_one, 4, [&](knit::result<int> r) { got = r.value(); }));
  p.shutdown();  // drain mode: it must run the call, so it must ring the worker
  EXPECT_EQ(got, 5);
}

TEST_F(held_wakes, letting_go_rings_what_is_owed_and_submit_rings_again) {
  knit::pool& p = held_pool_with_its_worker_asleep();
  ASSERT_FALSE(HasFailure());
  int got = 0;
  ASSERT_FALSE(p.submit(plus_one, 1, [&](knit::result<int> r) { got += r.value(); }));
  EXPECT_FALSE(p.hold_wakes(false));
  EXPECT_EQ(p.stats().host_wakes, 1u) << "hold_wakes(false) rings the owed wake";
  ASSERT_TRUE(drain_until(p, [&] { return got == 2; }));
  ASSERT_TRUE(worker_parked(p, 2));
  ASSERT_FALSE(p.submit(plus_one, 2, [&](knit::result<int> r) { got += r.value(); }));
  EXPECT_EQ(p.stats().host_wakes, 2u) << "not held: submit rings at once";
  ASSERT_TRUE(drain_until(p, [&] { return got == 5; }));
}

TEST(held_wakes_off, a_thread_that_is_no_host_is_told_so) {
  knit::pool p;
  knit::pool_host attached(p);
  std::thread stranger([&] {
    EXPECT_THROW((void)p.hold_wakes(true), std::logic_error);
    EXPECT_THROW(p.flush_wakes(), std::logic_error);
  });
  stranger.join();
}

TEST(held_wakes_off, nothing_is_held_unless_the_option_asks_for_it) {
  knit::pool plain;  // wake_at_turn_end off
  EXPECT_FALSE(plain.hold_wakes(true));
  knit::pool_options o;
  o.wake_at_turn_end = true;
  knit::pool asked(o);
  // The building thread, before any submit: hold_wakes attaches it, as a submit would.
  EXPECT_TRUE(asked.hold_wakes(true)) << "the building thread asked before its first submit";
  EXPECT_FALSE(asked.hold_wakes(false));
}

TEST_F(held_wakes, asio_host_rings_once_per_turn_after_its_handlers) {
  asio::io_context io;
  knit::pool p(shared_cpu_options(cpu_));
  knit::asio_host host(io, p);
  int done = 0;
  std::uint64_t wakes_inside_the_turn = ~0ull;
  ASSERT_TRUE(worker_parked(p));  // the asio_host attached the host; the worker is idle
  asio::post(io, [&] {
    for (int i = 0; i < 16; ++i) {
      ASSERT_FALSE(host.submit(plus_one, i, [&](knit::result<int> r) { done += r.ok(); }));
    }
    wakes_inside_the_turn = p.stats().host_wakes;
  });
  io.run_for(std::chrono::seconds(30));
  EXPECT_EQ(wakes_inside_the_turn, 0u) << "16 submits in one handler: the wake is held";
  EXPECT_EQ(done, 16);
  EXPECT_EQ(p.stats().host_wakes, 1u) << "one posted flush rang the worker once";
}

TEST_F(held_wakes, asio_host_rings_for_a_call_submitted_before_run) {
  asio::io_context io;
  knit::pool p(shared_cpu_options(cpu_));
  knit::asio_host host(io, p);
  ASSERT_TRUE(worker_parked(p));
  int got = 0;
  ASSERT_FALSE(host.submit(plus_one, 7, [&](knit::result<int> r) { got = r.value(); }));
  io.run_for(std::chrono::seconds(30));  // returns once nothing is pending
  EXPECT_EQ(got, 8) << "the flush posted at submit rang the worker when the loop ran";
}

TEST_F(held_wakes, asio_host_destroyed_with_a_wake_owed_still_answers_the_call) {
  asio::io_context io;
  knit::pool p(shared_cpu_options(cpu_));
  int answers = 0, got = 0;
  std::error_code ec;
  {
    knit::asio_host host(io, p);
    ASSERT_TRUE(worker_parked(p));
    ASSERT_FALSE(host.submit(plus_one, 2, [&](knit::result<int> r) {
      ++answers;
      if (r.ok()) got = r.value();
      else ec = r.error();
    }));
  }  // never ran io: the destructor rings the held wake and leaves, which cancels the call
     // if the worker has not started it yet (knit/pool_host.hpp) and waits for it otherwise
  EXPECT_EQ(answers, 1);
  EXPECT_TRUE(got == 3 || ec == knit::errc::cancelled) << got << " " << ec.message();
  ASSERT_TRUE(eventually([&] { return p.stats().workers.at(0).parks >= 2; }))
      << "the worker was rung: it woke and parked again, not left asleep with a call";
}

}  // namespace

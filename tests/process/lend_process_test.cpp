// Lent children (src/process/process_ring.hpp, "Lent children"; pool_options::lend_after,
// max_lent_workers): with the ring's only child held by a call (the "gate" task, opened by
// the test) past lend_after, the calls waiting behind it run on a child the ring lends;
// the lent child is retired once idle; with lending off they meet their deadline; a stuck
// call still fails alone. The host sleeps on completion_fd until pool::next_deadline(), so
// a lend or a retirement with no wake of its own never comes.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/process_helpers.hpp"
#include "process/process_ring.hpp"
#include "process/shared_region.hpp"

namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
using slot = std::optional<knit::result<std::string>>;

class process_lend : public ::testing::Test {
 protected:
  void TearDown() override {
    knit::detail::set_ring_hook(nullptr);
    knit_test::use_process_options({});
  }
};

auto keep(slot& into) {
  return [&into](knit::result<std::string> r) { into.emplace(std::move(r)); };
}

// Drains until `done()`, asleep on completion_fd until the pool's next_deadline() (no poll
// timeout standing in for a wake): false after 10 s (a wake that never came).
template <class Done>
bool drain_on_timer(knit::pool& pool, Done done) {
  const auto limit = steady::now() + 10s;
  while (!done()) {
    const auto now = steady::now();
    if (now > limit) return false;
    auto until = limit;
    if (const auto next = pool.next_deadline(); next && *next < until) until = *next;
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
    pollfd fd{pool.completion_fd(), POLLIN, 0};
    ::poll(&fd, 1, static_cast<int>(std::max<std::int64_t>(ms, 0)));
    if (steady::now() >= limit) return false;
    pool.drain();
  }
  return true;
}

std::atomic<knit::detail::region_header*> seen_header{nullptr};
std::atomic<knit::detail::lane_words*> seen_lane{nullptr};

// Where the gated call was published (its lane's request arena holds the gate).
struct gate_place {
  knit::detail::region_header* header;
  knit::detail::lane_words* lane;
};

// One child (its pid returned), up: the gated call then goes to it at once, published in
// submit (the hook sees it).
std::string warm(knit::pool& pool) {
  auto pid = knit_test::run_one(pool, "pid", "");
  EXPECT_TRUE(pid.ok()) << knit::failure_message(pid);
  return pid.ok() ? pid.value() : "";
}

gate_place submit_gated(knit::pool& pool, slot& out, knit::call_options options = {}) {
  seen_header = nullptr;
  seen_lane = nullptr;
  knit::detail::set_ring_hook(
      [](knit::detail::ring_point p, knit::detail::region_header& h, knit::detail::lane_words& l) {
        if (p != knit::detail::ring_point::host_publishing_request) return;
        seen_header = &h;
        seen_lane = &l;
      });
  EXPECT_FALSE(knit::submit_process(pool, "gate", "w", keep(out), options));
  knit::detail::set_ring_hook(nullptr);
  EXPECT_NE(seen_lane.load(), nullptr);
  return {seen_header.load(), seen_lane.load()};
}

// Opens the gate of the call published in `at` (the region's layout: the header page, then
// each lane's request and answer arenas).
void open_gate(const gate_place& at) {
  const auto index = static_cast<std::size_t>(at.lane - &at.header->lane[0]);
  char* request = reinterpret_cast<char*>(at.header) + knit::detail::region_page +
                  index * 2 * knit::detail::round_to_page(at.header->arena_bytes);
  std::atomic_ref<char>(*request).store('g', std::memory_order_release);
}

knit::pool_options one_child(unsigned lanes, unsigned lent,
                             knit::process_sandbox sandbox = knit::process_sandbox::off) {
  knit::process_options p;
  p.lanes = lanes;
  p.sandbox = sandbox;
  // Its wake (the check that a child began its oldest call) past the tests' 10 s: the lend
  // and the retirement wake the host on their own.
  p.begin_timeout = 60s;
  knit_test::use_process_options(p);
  knit::pool_options o = knit_test::threads(1);
  o.lend_after = 20ms;
  o.max_lent_workers = lent;
  return o;
}

// Opens the held call's gate and drains until its own answer comes: a success.
void release(knit::pool& pool, const gate_place& gate, slot& held) {
  open_gate(gate);
  ASSERT_TRUE(drain_on_timer(pool, [&] { return held.has_value(); }));
  EXPECT_TRUE(held->ok()) << knit::failure_message(*held);
}

bool all_done(const std::vector<slot>& calls) {
  return std::all_of(calls.begin(), calls.end(), [](const slot& s) { return s.has_value(); });
}

// Guards the lend (process_ring_lend.cpp): without it the calls behind the held one wait
// for it (the gate gives up after 10 s) and the drain gives up first.
TEST_F(process_lend, calls_behind_a_held_call_run_on_a_lent_child_while_it_is_held) {
  knit::pool pool(one_child(/*lanes=*/1, /*lent=*/1));
  const std::string main_pid = warm(pool);
  slot held;
  const gate_place gate = submit_gated(pool, held);
  std::vector<slot> behind(5);
  for (slot& b : behind) ASSERT_FALSE(knit::submit_process(pool, "pid", "", keep(b)));
  ASSERT_TRUE(drain_on_timer(pool, [&] { return all_done(behind); }));
  EXPECT_FALSE(held.has_value()) << "the held call is still running";
  for (slot& b : behind) {
    ASSERT_TRUE(b->ok()) << knit::failure_message(*b);
    EXPECT_NE(b->value(), main_pid) << "run on the lent child, not after the held call";
  }
  const knit::pool_stats s = pool.stats();
  EXPECT_EQ(s.lent_workers_started, 1u);  // at most max_lent_workers at once
  EXPECT_EQ(s.lent_workers_started, s.lent_workers_retired + s.lent_workers_now);
  open_gate(gate);
  ASSERT_TRUE(drain_on_timer(pool, [&] { return held.has_value(); }));
  ASSERT_TRUE(held->ok()) << knit::failure_message(*held);
  EXPECT_EQ(held->value(), main_pid) << "the held call's own result";
}

// Guards the moves onto a lent child: a call in the held child's second lane (the FIFO
// empty) is taken back and run on the lent child.
TEST_F(process_lend, a_call_in_the_held_childs_lane_moves_to_a_lent_child) {
  knit::pool pool(one_child(/*lanes=*/2, /*lent=*/1));
  const std::string main_pid = warm(pool);
  slot held, behind;
  const gate_place gate = submit_gated(pool, held);
  const auto before = knit::current_process_stats();
  ASSERT_FALSE(knit::submit_process(pool, "pid", "", keep(behind)));
  ASSERT_TRUE(drain_on_timer(pool, [&] { return behind.has_value(); }));
  EXPECT_FALSE(held.has_value());
  ASSERT_TRUE(behind->ok()) << knit::failure_message(*behind);
  EXPECT_NE(behind->value(), main_pid);
  EXPECT_EQ(knit::current_process_stats().calls_moved - before.calls_moved, 1u);
  EXPECT_EQ(pool.stats().lent_workers_started, 1u);
  ASSERT_NO_FATAL_FAILURE(release(pool, gate, held));
}

// Guards the retirement: once the held call is answered and nothing waits, the lent child
// is retired (its process killed and reaped) at the moment next_deadline() named, and then
// nothing is timed (an idle host sleeps). Without the retirement the lent child stays.
TEST_F(process_lend, an_idle_lent_child_is_retired_and_nothing_is_timed_after) {
  knit::pool pool(one_child(/*lanes=*/1, /*lent=*/1));
  const std::string main_pid = warm(pool);
  slot held;
  const gate_place gate = submit_gated(pool, held);
  std::vector<slot> behind(3);
  for (slot& b : behind) ASSERT_FALSE(knit::submit_process(pool, "pid", "", keep(b)));
  ASSERT_TRUE(drain_on_timer(pool, [&] { return all_done(behind); }));
  ASSERT_TRUE(behind[0]->ok()) << knit::failure_message(*behind[0]);
  const int lent_pid = std::stoi(behind[0]->value());
  EXPECT_NE(std::to_string(lent_pid), main_pid);
  open_gate(gate);
  ASSERT_TRUE(drain_on_timer(pool, [&] { return held.has_value(); }));
  ASSERT_TRUE(held->ok()) << knit::failure_message(*held);
  ASSERT_TRUE(drain_on_timer(pool, [&] { return pool.stats().lent_workers_now == 0; }))
      << "the idle lent child was never retired";
  const knit::pool_stats s = pool.stats();
  EXPECT_EQ(s.lent_workers_started, 1u);
  EXPECT_EQ(s.lent_workers_retired, s.lent_workers_started);
  EXPECT_EQ(::kill(lent_pid, 0), -1) << "the lent child's process is gone (reaped)";
  EXPECT_FALSE(pool.next_deadline().has_value()) << "an idle pool times nothing";
  // The ring's own child serves on.
  EXPECT_EQ(knit_test::run_one(pool, "pid", "").value(), main_pid);
}

// Lending off (max_lent_workers 0): the calls behind the held one wait in the FIFO until
// their deadline, as before lending.
TEST_F(process_lend, with_lending_off_the_calls_behind_meet_their_deadline) {
  knit::pool pool(one_child(/*lanes=*/1, /*lent=*/0));
  warm(pool);
  slot held;
  const gate_place gate = submit_gated(pool, held);
  knit::call_options deadline;
  deadline.timeout = 300ms;
  std::vector<slot> behind(3);
  for (slot& b : behind) ASSERT_FALSE(knit::submit_process(pool, "pid", "", keep(b), deadline));
  ASSERT_TRUE(drain_on_timer(pool, [&] { return all_done(behind); }));
  for (slot& b : behind) EXPECT_EQ(b->error(), knit::errc::timed_out);
  EXPECT_FALSE(held.has_value());
  EXPECT_EQ(pool.stats().lent_workers_started, 0u);
  ASSERT_NO_FATAL_FAILURE(release(pool, gate, held));
}

// A stuck call fails alone at its limit (its child killed), with a child lent beside it:
// the calls behind it run, none fails with it.
TEST_F(process_lend, a_stuck_call_still_fails_alone) {
  knit::pool pool(one_child(/*lanes=*/1, /*lent=*/1));
  warm(pool);
  slot stuck;
  knit::call_options limit;
  limit.stuck_after = 1s;
  submit_gated(pool, stuck, limit);  // never opened
  std::vector<slot> behind(3);
  for (slot& b : behind) ASSERT_FALSE(knit::submit_process(pool, "pid", "", keep(b)));
  ASSERT_TRUE(drain_on_timer(pool, [&] { return stuck.has_value() && all_done(behind); }));
  EXPECT_EQ(stuck->error(), knit::errc::stuck) << knit::failure_message(*stuck);
  for (slot& b : behind) EXPECT_TRUE(b->ok()) << knit::failure_message(*b);
  const knit::pool_stats s = pool.stats();
  EXPECT_EQ(s.calls_stuck, 1u);
  EXPECT_GE(s.lent_workers_started, 1u);
}

// A task that attacks its own sandbox on a lent child (started by the same worker box code
// as any child, so strict too): its socket is refused and the host's memory and environment
// stay out of reach; only its own call fails, and the call beside it and the held call
// succeed.
TEST_F(process_lend, a_task_attacking_its_sandbox_on_a_lent_child_fails_only_its_own_call) {
  knit::pool pool(one_child(/*lanes=*/1, /*lent=*/1, knit::process_sandbox::strict));
  warm(pool);
  slot held;
  const gate_place gate = submit_gated(pool, held);
  slot attack, snoop, beside;
  ASSERT_FALSE(knit::submit_process(pool, "connect", "", keep(attack)));
  ASSERT_FALSE(knit::submit_process(pool, "hostile_proc", std::to_string(::getpid()), keep(snoop)));
  ASSERT_FALSE(knit::submit_process(pool, "echo", "beside", keep(beside)));
  ASSERT_TRUE(drain_on_timer(pool, [&] { return attack && snoop && beside; }));
  EXPECT_FALSE(held.has_value()) << "the calls ran on a lent child, not after the held one";
  EXPECT_GE(pool.stats().lent_workers_started, 1u);
  ASSERT_FALSE(attack->ok()) << attack->value();
  EXPECT_EQ(attack->error(), knit::errc::sandbox_violation) << knit::failure_message(*attack);
  ASSERT_TRUE(snoop->ok()) << knit::failure_message(*snoop);
  EXPECT_EQ(snoop->value().find("mem: ok"), std::string::npos) << snoop->value();
  EXPECT_EQ(snoop->value().find("environ: ok"), std::string::npos) << snoop->value();
  ASSERT_TRUE(beside->ok()) << knit::failure_message(*beside);
  EXPECT_EQ(beside->value(), "beside");
  ASSERT_NO_FATAL_FAILURE(release(pool, gate, held));
}

}  // namespace

// The host <-> child ring (src/process/process_ring.hpp): calls go from the host's thread to
// its children with no pool worker thread between; each window of its protocol is forced
// with a hook (set_ring_hook) and named after what it guards.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/process_helpers.hpp"
#include "process/process_ring.hpp"
#include "process/shared_region.hpp"

namespace {

using namespace std::chrono_literals;
using knit_test::process_call;
using knit_test::run_calls;
using knit_test::run_one;

class process_host_ring : public ::testing::Test {
 protected:
  void TearDown() override {
    knit::detail::set_ring_hook(nullptr);
    knit_test::use_process_options({});
  }
};

// Waits up to 5 s for `done()` (a word the other process writes).
template <class Done>
bool within_5s(Done done) {
  const auto limit = std::chrono::steady_clock::now() + 5s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > limit) return false;
    std::this_thread::sleep_for(100us);
  }
  return true;
}

// Drains until `done` calls are delivered, sleeping only on completion_fd (never a poll
// timeout standing in for a wake): false if the fd stayed silent 5 s with calls out.
bool wait_woken(knit::pool& pool, const int& done, int want) {
  while (done < want) {
    pollfd fd{pool.completion_fd(), POLLIN, 0};
    if (::poll(&fd, 1, 5000) != 1) return false;
    pool.drain();
  }
  return true;
}

TEST_F(process_host_ring, calls_reach_the_children_with_no_worker_thread_between) {
  knit::pool pool(knit_test::threads(2));
  knit::process_workers workers(pool);
  const auto before = knit::current_process_stats();
  std::vector<process_call> calls;
  for (int i = 0; i < 100; ++i) calls.push_back({"echo", "call " + std::to_string(i), {}});
  calls.push_back({"repeat", std::to_string(64 * 1024), {}});
  ASSERT_TRUE(run_calls(pool, calls));
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(calls[i].result->ok()) << knit::failure_message(*calls[i].result);
    EXPECT_EQ(calls[i].result->value(), "call " + std::to_string(i));
  }
  ASSERT_TRUE(calls[100].result->ok());
  EXPECT_EQ(calls[100].result->value(), std::string(64 * 1024, 'x'));
  const auto after = knit::current_process_stats();
  // The two children process_workers started, and no other: a worker thread running a
  // process call would have started one of its own.
  EXPECT_EQ(after.children_started, before.children_started);
  EXPECT_EQ(after.calls - before.calls, 101u);
  for (const auto& w : pool.stats().workers)
    EXPECT_EQ(w.calls_run, 0u);  // no worker thread ran one
}

// Guards the request's ring (ring_if_sleeping after request_seq in send): the child is
// asleep in poll when the request is published, so only the eventfd wakes it.
// Without that ring (the line removed once), this test fails: the call's 5 s passes.
TEST_F(process_host_ring, a_child_asleep_as_a_request_is_published_is_woken) {
  knit::pool pool(knit_test::threads(1));
  ASSERT_TRUE(run_one(pool, "echo", "warm").ok());  // the child is up, then idles
  static std::atomic<int> seen_asleep{0};
  seen_asleep = 0;
  knit::detail::set_ring_hook(
      [](knit::detail::ring_point p, knit::detail::region_header& h, knit::detail::lane_words&) {
        if (p != knit::detail::ring_point::host_publishing_request) return;
        if (within_5s([&] { return knit::detail::load(h.child_sleeping) == 1; })) ++seen_asleep;
        // Not a timing assertion: room for the child to take a left-over wake, find no new
        // request and go back to sleep in poll, where only the request's ring can reach it.
        std::this_thread::sleep_for(50ms);
      });
  int done = 0;
  std::string out;
  ASSERT_FALSE(knit::submit_process(pool, "echo", "wake", [&](knit::result<std::string> r) {
    out = r.ok() ? r.value() : knit::failure_message(r);
    ++done;
  }));
  EXPECT_TRUE(wait_woken(pool, done, 1));
  EXPECT_EQ(seen_asleep.load(), 1);
  EXPECT_EQ(out, "wake");
}

// Guards the answer's ring (host_sleeping held at 1 when the ring takes a child, and the
// answer eventfd in the epoll set behind completion_fd): the host has looked at the child,
// found no answer, and goes to sleep on completion_fd just as the answer is published.
TEST_F(process_host_ring, an_answer_published_as_the_host_goes_to_sleep_wakes_it) {
  knit::pool pool(knit_test::threads(1));
  ASSERT_TRUE(run_one(pool, "echo", "warm").ok());
  static std::atomic<int> answered_behind{0};
  answered_behind = 0;
  knit::detail::set_ring_hook(
      [](knit::detail::ring_point p, knit::detail::region_header&, knit::detail::lane_words& lane) {
        if (p != knit::detail::ring_point::host_read_answers || answered_behind != 0) return;
        const std::uint64_t seq = knit::detail::load(lane.request_seq);
        if (within_5s([&] {
              return knit::detail::load(lane.answer_seq, std::memory_order_acquire) == seq;
            })) {
          ++answered_behind;
        }
      });
  int done = 0;
  std::string out;
  ASSERT_FALSE(knit::submit_process(pool, "sleep_pid", "20", [&](knit::result<std::string> r) {
    out = r.ok() ? r.value() : knit::failure_message(r);
    ++done;
  }));
  // This drain finds no answer (the task sleeps 20 ms), and the hook holds it until the
  // answer is out: the next wake must come from the child's ring alone.
  pool.drain();
  EXPECT_TRUE(wait_woken(pool, done, 1));
  EXPECT_EQ(answered_behind.load(), 1);
  EXPECT_FALSE(out.empty());
  EXPECT_NE(out, std::to_string(::getpid()));
}

// Guards the FIFO's hand-over after a death: calls queued behind one that kills its child
// go to the replacement.
TEST_F(process_host_ring, calls_queued_behind_a_crash_go_to_the_replacement) {
  knit::pool pool(knit_test::threads(1));
  const auto before = knit::current_process_stats();
  std::vector<process_call> calls{{"segv", "", {}}};
  for (int i = 0; i < 10; ++i) calls.push_back({"echo", std::to_string(i), {}});
  ASSERT_TRUE(run_calls(pool, calls));
  ASSERT_FALSE(calls[0].result->ok());
  EXPECT_EQ(calls[0].result->error(), knit::errc::worker_crashed);
  EXPECT_NE(knit::failure_message(*calls[0].result).find("killed by signal 11 (SIGSEGV)"),
            std::string::npos)
      << knit::failure_message(*calls[0].result);
  for (int i = 1; i <= 10; ++i) {
    ASSERT_TRUE(calls[i].result->ok()) << knit::failure_message(*calls[i].result);
    EXPECT_EQ(calls[i].result->value(), std::to_string(i - 1));
  }
  const auto after = knit::current_process_stats();
  EXPECT_EQ(after.crashes - before.crashes, 1u);
  EXPECT_EQ(after.respawned - before.respawned, 1u);
}

// Guards the state move queued -> running before a send: a call cancelled, or past its
// deadline, while it waits behind a busy child is never sent.
TEST_F(process_host_ring, a_call_cancelled_or_past_its_deadline_while_queued_is_never_run) {
  knit::process_options o;
  o.lanes = 1;  // no lane behind the running call: both wait in the FIFO
  knit_test::use_process_options(o);
  knit::pool pool(knit_test::threads(1));
  ASSERT_TRUE(run_one(pool, "echo", "warm").ok());
  const auto before = knit::current_process_stats();
  int done = 0;
  std::optional<knit::result<std::string>> busy, cancelled, late;
  auto keep = [&](std::optional<knit::result<std::string>>& slot) {
    return [&](knit::result<std::string> r) {
      slot.emplace(std::move(r));
      ++done;
    };
  };
  ASSERT_FALSE(knit::submit_process(pool, "sleep_pid", "300", keep(busy)));
  knit::call_id id = 0;
  ASSERT_FALSE(knit::submit_process(pool, "echo", "cancelled", keep(cancelled), {}, &id));
  knit::call_options short_deadline;
  short_deadline.timeout = 50ms;
  ASSERT_FALSE(knit::submit_process(pool, "echo", "late", keep(late), short_deadline));
  EXPECT_TRUE(pool.cancel(id));
  const auto limit = std::chrono::steady_clock::now() + 10s;
  while (done < 3 && std::chrono::steady_clock::now() < limit) {
    pollfd fd{pool.completion_fd(), POLLIN, 0};
    ::poll(&fd, 1, 10);
    pool.drain();
  }
  ASSERT_EQ(done, 3);
  EXPECT_TRUE(busy->ok());
  EXPECT_EQ(cancelled->error(), knit::errc::cancelled);
  EXPECT_EQ(late->error(), knit::errc::timed_out);
  // Only the sleeping call reached a child.
  EXPECT_EQ(knit::current_process_stats().calls - before.calls, 1u);
  EXPECT_EQ(run_one(pool, "echo", "after").value(), "after");
}

// Guards the ring's limit check: the running call past its stuck limit (or its deadline)
// has its child killed and replaced; the next call is served by the replacement.
TEST_F(process_host_ring, a_running_call_past_its_limit_kills_and_replaces_its_child) {
  knit::pool pool(knit_test::threads(1));
  const std::string first = run_one(pool, "pid", "").value();
  const auto before = knit::current_process_stats();
  knit::call_options stuck;
  stuck.stuck_after = 100ms;
  auto r = run_one(pool, "sleep_pid", "10000", stuck);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), knit::errc::stuck) << knit::failure_message(r);
  EXPECT_NE(knit::failure_message(r).find("killed by signal 9"), std::string::npos)
      << knit::failure_message(r);
  // Declared stuck by this host, as its stuck scan declares a worker thread's call; no
  // worker thread was retired for it.
  EXPECT_EQ(pool.stats().calls_stuck, 1u);
  EXPECT_EQ(pool.stats().workers_replaced, 0u);
  // The replacement up before the next call, whose deadline must find it running, not
  // waiting for a start (a slow start under a sanitizer outlasts 100 ms).
  ASSERT_TRUE(run_one(pool, "pid", "").ok());
  knit::call_options deadline;
  deadline.timeout = 100ms;
  r = run_one(pool, "sleep_pid", "10000", deadline);
  EXPECT_EQ(r.error(), knit::errc::timed_out);
  EXPECT_EQ(pool.stats().calls_stuck, 1u);  // a deadline's kill is no stuck call
  const std::string next = run_one(pool, "pid", "").value();
  EXPECT_NE(next, first);
  const auto after = knit::current_process_stats();
  EXPECT_EQ(after.killed - before.killed, 2u);
  EXPECT_EQ(after.crashes - before.crashes, 0u);
  EXPECT_EQ(::kill(std::stoi(first), 0), -1);  // reaped: not even a zombie
}

// An idle child killed from outside: its fds and its mapping are released when its death
// is seen, with no call made (the replacement's are the only ones left).
TEST_F(process_host_ring, an_idle_child_killed_releases_its_fds_and_mapping_at_once) {
  knit::pool pool(knit_test::threads(1));
  const std::string pid = run_one(pool, "pid", "").value();
  const std::size_t fds = knit_test::open_fd_count();
  const std::size_t maps = knit_test::memfd_mappings();
  const auto before = knit::current_process_stats();
  ASSERT_EQ(::kill(std::stoi(pid), SIGKILL), 0);
  // The pidfd in completion_fd's set wakes the host; the replacement's start wakes it again.
  const auto limit = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < limit) {
    pollfd fd{pool.completion_fd(), POLLIN, 0};
    ::poll(&fd, 1, 100);
    pool.drain();
    if (knit::current_process_stats().respawned > before.respawned &&
        knit_test::memfd_mappings() == maps && knit_test::open_fd_count() == fds) {
      break;
    }
  }
  EXPECT_EQ(knit::current_process_stats().respawned - before.respawned, 1u);
  EXPECT_EQ(knit_test::memfd_mappings(), maps);  // the replacement's, held by its box
  EXPECT_EQ(knit_test::open_fd_count(), fds);
  EXPECT_NE(run_one(pool, "pid", "").value(), pid);
}

// Thread calls beside process calls on a host with a ring: their completions ring the
// doorbell inside the ring's epoll set, which the drain reads only when that set reported
// it (host_doorbell::reset(read)). Every completion must still wake completion_fd: the
// loop sleeps only there (wait_woken), 200 rounds of one thread call and one process call.
TEST_F(process_host_ring, thread_calls_beside_process_calls_wake_the_host) {
  knit::pool pool(knit_test::threads(2));
  int done = 0;
  for (int round = 0; round < 200; ++round) {
    const int want = done + 2;
    int value = 0;
    std::string echoed;
    ASSERT_FALSE(pool.submit([](int x) { return x + 1; }, round,
                             [&](knit::result<int> r) {
                               value = r.ok() ? r.value() : -1;
                               ++done;
                             }));
    ASSERT_FALSE(
        knit::submit_process(pool, "echo", std::to_string(round), [&](knit::result<std::string> r) {
          echoed = r.ok() ? r.value() : knit::failure_message(r);
          ++done;
        }));
    ASSERT_TRUE(wait_woken(pool, done, want)) << "round " << round;
    EXPECT_EQ(value, round + 1);
    EXPECT_EQ(echoed, std::to_string(round));
  }
}

TEST_F(process_host_ring, the_pools_end_reaps_every_child) {
  std::vector<int> pids;
  {
    knit::pool pool(knit_test::threads(2));
    knit::process_workers workers(pool);  // both up: the two calls go to one each
    std::vector<process_call> calls{{"sleep_pid", "50", {}}, {"sleep_pid", "50", {}}};
    ASSERT_TRUE(run_calls(pool, calls));
    for (auto& c : calls) pids.push_back(std::stoi(c.result->value()));
    EXPECT_NE(pids[0], pids[1]);
  }
  for (int pid : pids) EXPECT_EQ(::kill(pid, 0), -1) << pid;
}

}  // namespace

namespace {

// Shutdown past its deadline: the running call's child is killed, the call fails with
// cancelled, and the pool's end waits for nothing more.
TEST_F(process_host_ring, shutdown_past_its_deadline_kills_the_running_child) {
  int pid = 0;
  std::optional<knit::result<std::string>> late;
  {
    knit::pool_options o = knit_test::threads(1);
    o.stop_timeout = 200ms;
    knit::pool pool(o);
    pid = std::stoi(run_one(pool, "pid", "").value());
    ASSERT_FALSE(knit::submit_process(pool, "sleep_pid", "20000",
                                      [&](knit::result<std::string> r) { late.emplace(r); }));
    pool.drain();
  }
  ASSERT_TRUE(late.has_value());
  EXPECT_EQ(late->error(), knit::errc::cancelled) << knit::failure_message(*late);
  EXPECT_EQ(::kill(pid, 0), -1);
}

}  // namespace

// The lanes (process_options::lanes, shared_region.hpp version 4): calls queued in a child's
// mapping behind the running one.
namespace {

// Which of the mapping's lanes `lane` is.
std::size_t lane_index(knit::detail::region_header& h, knit::detail::lane_words& lane) {
  return static_cast<std::size_t>(&lane - &h.lane[0]);
}

// Opens the gate of the "gate" task running in `lane`: the first byte of that lane's request
// arena (the region's layout: the header page, then each lane's request and answer arenas).
void open_gate(knit::detail::region_header& h, knit::detail::lane_words& lane) {
  const std::size_t index = lane_index(h, lane);
  char* request = reinterpret_cast<char*>(&h) + knit::detail::region_page +
                  index * 2 * knit::detail::round_to_page(h.arena_bytes);
  std::atomic_ref<char>(*request).store('g', std::memory_order_release);
}

// Drains (sleeping on completion_fd) until `done()`: false after 10 s.
template <class Done>
bool drain_until(knit::pool& pool, Done done) {
  const auto limit = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > limit) return false;
    pollfd fd{pool.completion_fd(), POLLIN, 0};
    ::poll(&fd, 1, 10);
    pool.drain();
  }
  return true;
}

using slot = std::optional<knit::result<std::string>>;
auto keep(slot& into) {
  return [&into](knit::result<std::string> r) { into.emplace(std::move(r)); };
}

std::atomic<knit::detail::region_header*> seen_header{nullptr};
std::atomic<knit::detail::lane_words*> seen_lane{nullptr};

// Guards the child's turn through its lanes (child_loop.cpp: the next lane looked at as
// soon as one is answered): a call queued behind the running one is started and answered
// by the child alone, with no step of its host in between. With one lane (R = 1), or a
// child that waited for the host, the second call would sit unanswered.
TEST_F(process_host_ring, a_child_runs_the_call_queued_behind_without_its_host) {
  knit::pool pool(knit_test::threads(1));
  ASSERT_TRUE(run_one(pool, "echo", "warm").ok());
  seen_lane = nullptr;
  knit::detail::set_ring_hook(
      [](knit::detail::ring_point p, knit::detail::region_header&, knit::detail::lane_words& l) {
        if (p == knit::detail::ring_point::host_publishing_request) seen_lane = &l;
      });
  slot first, behind;
  ASSERT_FALSE(knit::submit_process(pool, "sleep_pid", "20", keep(first)));
  knit::detail::lane_words* first_lane = seen_lane.load();
  ASSERT_FALSE(knit::submit_process(pool, "echo", "behind", keep(behind)));
  knit::detail::lane_words* behind_lane = seen_lane.load();
  ASSERT_NE(first_lane, behind_lane);  // in the next lane, not waiting in the FIFO
  // No drain: only the child can move the second call's answer_seq.
  EXPECT_TRUE(within_5s([&] {
    return knit::detail::load(behind_lane->answer_seq, std::memory_order_acquire) ==
           knit::detail::load(behind_lane->request_seq);
  }));
  ASSERT_TRUE(drain_until(pool, [&] { return first && behind; }));
  ASSERT_TRUE(first->ok()) << knit::failure_message(*first);
  ASSERT_TRUE(behind->ok()) << knit::failure_message(*behind);
  EXPECT_EQ(behind->value(), "behind");
}

// Guards end_flights' hand-back after a death: a call that was in the dead child's next lane
// had not started (the child answers before it moves on), so it goes to the replacement.
TEST_F(process_host_ring, a_call_in_the_lane_behind_a_crash_runs_on_the_replacement) {
  knit::pool pool(knit_test::threads(1));
  const std::string crashed = run_one(pool, "pid", "").value();
  const auto before = knit::current_process_stats();
  slot crash, behind;
  ASSERT_FALSE(knit::submit_process(pool, "segv", "", keep(crash)));
  ASSERT_FALSE(knit::submit_process(pool, "pid", "", keep(behind)));
  ASSERT_TRUE(drain_until(pool, [&] { return crash && behind; }));
  EXPECT_EQ(crash->error(), knit::errc::worker_crashed);
  ASSERT_TRUE(behind->ok()) << knit::failure_message(*behind);
  EXPECT_NE(behind->value(), crashed);  // the replacement ran it
  const auto after = knit::current_process_stats();
  EXPECT_EQ(after.crashes - before.crashes, 1u);
  EXPECT_EQ(after.calls - before.calls, 2u);                // segv, pid (each counted once)
  EXPECT_EQ(after.calls_resent - before.calls_resent, 1u);  // pid, sent again once
}

// Guards the withdrawal (the host's claim): a call cancelled while it waits in a lane behind
// a running one is handed back at once, and the child, reaching it, answers it without
// running it. The running call is held at a gate the test opens only after the host's
// step has seen the cancel. Without the host's claim the child runs it (the answer is
// dropped) and calls_withdrawn stays 0.
TEST_F(process_host_ring, a_call_given_up_in_its_lane_is_answered_without_being_run) {
  knit::pool pool(knit_test::threads(1));
  ASSERT_TRUE(run_one(pool, "echo", "warm").ok());
  seen_header = nullptr;
  seen_lane = nullptr;
  knit::detail::set_ring_hook(
      [](knit::detail::ring_point p, knit::detail::region_header& h, knit::detail::lane_words& l) {
        if (p != knit::detail::ring_point::host_publishing_request || seen_lane) return;
        seen_header = &h;  // the gated call's
        seen_lane = &l;
      });
  const auto before = knit::current_process_stats();
  slot gated, given_up;
  knit::call_id id = 0;
  ASSERT_FALSE(knit::submit_process(pool, "gate", "w", keep(gated)));
  ASSERT_FALSE(knit::submit_process(pool, "echo", "never", keep(given_up), {}, &id));
  ASSERT_TRUE(pool.cancel(id));
  ASSERT_TRUE(given_up.has_value());  // delivered at once, as any queued call's cancel
  EXPECT_EQ(given_up->error(), knit::errc::cancelled);
  pool.drain();  // the step that withdraws it: the gated call still runs
  EXPECT_FALSE(gated.has_value());
  open_gate(*seen_header.load(), *seen_lane.load());
  ASSERT_TRUE(drain_until(pool, [&] {
    return gated && knit::current_process_stats().calls_withdrawn > before.calls_withdrawn;
  }));
  ASSERT_TRUE(gated->ok()) << knit::failure_message(*gated);
  EXPECT_EQ(knit::current_process_stats().calls_withdrawn - before.calls_withdrawn, 1u);
  EXPECT_EQ(run_one(pool, "echo", "after").value(), "after");  // the child lives on
}

// Guards the second look after a kill (end_past_limit: take_answers once the child is dead): the
// running call ran past its deadline, and the child answered it in the moment between the
// host's read and its kill, then started the call behind (its claim says so). The answer is
// taken (the call is not failed for nothing) and the call behind, which had started, fails
// instead of being sent again: never run twice.
TEST_F(process_host_ring, a_call_answered_just_before_its_kill_keeps_its_answer) {
  knit::pool pool(knit_test::threads(1));
  ASSERT_TRUE(run_one(pool, "echo", "warm").ok());
  static std::atomic<int> held{0};
  held = 0;
  knit::detail::set_ring_hook(
      [](knit::detail::ring_point p, knit::detail::region_header& h, knit::detail::lane_words& l) {
        if (p != knit::detail::ring_point::host_killing_child || held++ != 0) return;
        open_gate(h, l);  // the gated call is the one past its deadline, in lane l
        // Its answer, then the child's claim of the call behind, in the next lane: without
        // that wait, a child slow to begin the next call was killed before it claimed it, and
        // the call behind went, unstarted, to the replacement (the other branch of
        // end_past_limit, not the one this test forces) and slept its 10 s there.
        knit::detail::lane_words& next = h.lane[(lane_index(h, l) + 1) % h.lanes];
        within_5s([&] {
          return knit::detail::load(l.answer_seq, std::memory_order_acquire) ==
                     knit::detail::load(l.request_seq) &&
                 knit::detail::load(next.claim, std::memory_order_acquire) ==
                     ~knit::detail::load(next.request_seq);
        });
      });
  const auto before = knit::current_process_stats();
  knit::call_options short_deadline;
  short_deadline.timeout = 100ms;
  slot gated, behind;
  ASSERT_FALSE(knit::submit_process(pool, "gate", "w", keep(gated), short_deadline));
  ASSERT_FALSE(knit::submit_process(pool, "sleep_pid", "10000", keep(behind)));
  ASSERT_TRUE(drain_until(pool, [&] { return gated && behind; }));
  EXPECT_EQ(held.load(), 1);
  ASSERT_TRUE(gated->ok()) << knit::failure_message(*gated);
  ASSERT_FALSE(behind->ok());
  EXPECT_EQ(behind->error(), knit::errc::worker_crashed);
  EXPECT_NE(knit::failure_message(*behind).find("while it ran this call"), std::string::npos)
      << knit::failure_message(*behind);
  const auto after = knit::current_process_stats();
  EXPECT_EQ(after.calls - before.calls, 2u);  // the call behind was not sent again
  EXPECT_EQ(after.killed - before.killed, 1u);
}

// Guards the nonce (call_nonce.hpp): a task pre-writes a well-formed answer into the next
// lane with the sequence the next call would have had were sequences counted; the next
// call, sent into that lane, gets its own answer, never the forged one. With sequences
// counted (the nonce replaced by ++seq once), the echo got "forged".
TEST_F(process_host_ring, an_answer_forged_ahead_in_the_next_lane_is_never_taken) {
  knit::pool pool(knit_test::threads(1));    // one child, lanes 2: the victim is behind
  for (int round = 0; round < 4; ++round) {  // the forgery in either lane
    slot forger, victim;
    ASSERT_FALSE(knit::submit_process(pool, "forge_next", "50", keep(forger)));
    ASSERT_FALSE(knit::submit_process(pool, "sleep_pid", "100", keep(victim)));
    ASSERT_TRUE(drain_until(pool, [&] { return forger && victim; }));
    ASSERT_TRUE(forger->ok()) << knit::failure_message(*forger);
    ASSERT_TRUE(victim->ok()) << knit::failure_message(*victim);
    EXPECT_NE(victim->value(), "forged") << round;
    EXPECT_EQ(victim->value().find_first_not_of("0123456789"), std::string::npos)
        << victim->value();
  }
}

// Guards the wake budget (process_ring.hpp, spare_rings): a thread left behind rings the
// host's answer eventfd without end. The host counts the edges against the answers and
// kills the child as a broken protocol; the next call runs on its replacement. Without the
// budget the host is woken hundreds of thousands of times a second and protocol_kills stays.
TEST_F(process_host_ring, a_child_that_rings_without_answers_is_killed) {
  knit::pool pool(knit_test::threads(1));
  const auto before = knit::current_process_stats();
  // The task's thread starts ringing before the task returns: the host may kill the child
  // for its rings before or after the answer reaches it (a slow machine, TSan). Either way
  // only this call may fail, and then with the broken protocol named.
  auto first = run_one(pool, "ring_spin", "");
  if (first.ok()) {
    EXPECT_EQ(first.value(), "ok");
  } else {
    EXPECT_NE(knit::failure_message(first).find("broke the protocol"), std::string::npos)
        << knit::failure_message(first);
  }
  ASSERT_TRUE(knit_test::within_10s([&] {
    pool.drain();
    return knit::current_process_stats().protocol_kills > before.protocol_kills;
  }));
  EXPECT_EQ(run_one(pool, "echo", "after").value(), "after");
}

// A pool of two worker threads whose two children, four lanes each, are up before the
// test's first call (process_workers).
struct two_children_four_lanes {
  static knit::pool_options options() {
    knit::process_options o;
    o.lanes = 4;
    knit_test::use_process_options(o);
    return knit_test::threads(2);
  }
  knit::pool pool{options()};
  knit::process_workers workers{pool};
};

// Guards the moves (child_choice.hpp): calls queued behind a slow one in its child's lanes
// are taken back (claim) and sent to the other child once it idles; each is answered long
// before the slow call. Without move_waiting, those in the slow child's lanes waited the
// slow call out (1.5 s).
TEST_F(process_host_ring, calls_behind_a_slow_one_move_to_an_idle_child) {
  two_children_four_lanes up;
  knit::pool& pool = up.pool;
  ASSERT_TRUE(run_one(pool, "echo", "warm").ok());
  const auto before = knit::current_process_stats();
  const auto start = std::chrono::steady_clock::now();
  slot slow;
  std::vector<slot> quick(6);
  std::vector<std::chrono::steady_clock::duration> took(6);
  ASSERT_FALSE(knit::submit_process(pool, "sleep_pid", "1500", keep(slow)));
  for (int i = 0; i < 6; ++i) {
    ASSERT_FALSE(
        knit::submit_process(pool, "echo", std::to_string(i), [&, i](knit::result<std::string> r) {
          quick[static_cast<std::size_t>(i)].emplace(std::move(r));
          took[static_cast<std::size_t>(i)] = std::chrono::steady_clock::now() - start;
        }));
  }
  ASSERT_TRUE(drain_until(pool, [&] {
    return std::all_of(quick.begin(), quick.end(), [](const slot& q) { return q.has_value(); });
  }));
  EXPECT_FALSE(slow.has_value()) << "a quick call waited the slow one out";
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(quick[static_cast<std::size_t>(i)]->ok());
    EXPECT_EQ(quick[static_cast<std::size_t>(i)]->value(), std::to_string(i));
    EXPECT_LT(took[static_cast<std::size_t>(i)], 1s) << i;
  }
  ASSERT_TRUE(drain_until(pool, [&] { return slow.has_value(); }));
  EXPECT_TRUE(slow->ok());
  const auto after = knit::current_process_stats();
  EXPECT_EQ(after.calls - before.calls, 7u);  // a moved call is counted once
}

// The first three calls a test publishes: their region and lane, in order.
std::atomic<unsigned> published{0};
std::array<std::atomic<knit::detail::region_header*>, 3> published_header{};
std::array<std::atomic<knit::detail::lane_words*>, 3> published_lane{};

// Guards the host's take-back from the 0 it wrote only (take_back): a task may scribble
// over every lane of its child, so a claim word the host did not write proves nothing about
// whether the call began. The test writes such a scribble (all ones) into the claim of a
// call queued behind a gated one, then idles the other child: the step that would move the
// call leaves it where it is. It runs once, on its own child, after the gate. Without the
// check the host's CAS took the scribbled word for "not begun" and moved the call (answered
// from the other child's pid, calls_moved 1): a task that scribbled its own claim after it
// began then ran on a second child, and once more when sent again after its first child's
// death (each_way scribble_crash counted 3 crashes in about 1 run of 40).
TEST_F(process_host_ring, a_claim_a_task_scribbled_is_never_taken_back) {
  two_children_four_lanes up;
  knit::pool& pool = up.pool;
  ASSERT_TRUE(run_one(pool, "echo", "warm").ok());
  published = 0;
  knit::detail::set_ring_hook(
      [](knit::detail::ring_point p, knit::detail::region_header& h, knit::detail::lane_words& l) {
        if (p != knit::detail::ring_point::host_publishing_request) return;
        const unsigned n = published.load();
        if (n >= published_header.size()) return;
        published_header[n] = &h;
        published_lane[n] = &l;
        published = n + 1;
      });
  const auto before = knit::current_process_stats();
  std::array<slot, 2> gated;
  slot behind;
  ASSERT_FALSE(knit::submit_process(pool, "gate", "w", keep(gated[0])));
  ASSERT_FALSE(knit::submit_process(pool, "gate", "w", keep(gated[1])));
  ASSERT_FALSE(knit::submit_process(pool, "pid", "", keep(behind)));
  ASSERT_EQ(published.load(), 3u);  // each sent at its submit: two idle children, one lane
  // The gated call in front of `behind` (same child), and the other.
  const unsigned front = published_header[0].load() == published_header[2].load() ? 0 : 1;
  const unsigned other = 1 - front;
  ASSERT_EQ(published_header[front].load(), published_header[2].load());
  ASSERT_NE(published_header[other].load(), published_header[2].load());
  std::atomic_ref<std::uint64_t>(published_lane[2].load()->claim)
      .store(~std::uint64_t{0}, std::memory_order_release);  // what a scribbling task leaves
  // The other child answers and idles: the step that takes its answer tries the move.
  open_gate(*published_header[other].load(), *published_lane[other].load());
  ASSERT_TRUE(drain_until(pool, [&] { return gated[other].has_value(); }));
  ASSERT_TRUE(gated[other]->ok()) << knit::failure_message(*gated[other]);
  EXPECT_EQ(knit::current_process_stats().calls_moved - before.calls_moved, 0u);
  open_gate(*published_header[front].load(), *published_lane[front].load());
  ASSERT_TRUE(drain_until(pool, [&] { return gated[front] && behind; }));
  ASSERT_TRUE(gated[front]->ok()) << knit::failure_message(*gated[front]);
  ASSERT_TRUE(behind->ok()) << knit::failure_message(*behind);
  EXPECT_EQ(behind->value(), gated[front]->value()) << "run by the other child";
  const auto after = knit::current_process_stats();
  EXPECT_EQ(after.calls_moved - before.calls_moved, 0u);
  EXPECT_EQ(after.calls_withdrawn - before.calls_withdrawn, 0u);
  EXPECT_EQ(after.calls - before.calls, 3u);
}

// Guards the hung-child check (process_options::begin_timeout, end_if_hung): a task leaves
// its child blocked in its own answer bell, so the child never begins the next call sent to
// it. Past begin_timeout the child is killed and the call, never begun, runs on another
// child. Without the check the call waited for its stuck limit (10 s) and failed `stuck`.
TEST_F(process_host_ring, a_call_sent_to_a_child_a_task_left_hung_runs_elsewhere) {
  knit::process_options o;
  o.begin_timeout = 300ms;
  knit_test::use_process_options(o);
  knit::pool pool(knit_test::threads(1));
  const auto before = knit::current_process_stats();
  knit::call_options jam_limit;
  jam_limit.stuck_after = 200ms;  // its answer was written but never rung: the limit's step
  auto jam = run_one(pool, "jam_answer_bell", "", jam_limit);  // takes it, or kills it
  if (jam.ok()) {
    EXPECT_EQ(jam.value(), "jammed");
  }
  knit::call_options victim_limit;
  victim_limit.stuck_after = 10s;
  const auto start = std::chrono::steady_clock::now();
  auto victim = run_one(pool, "echo", "mine", victim_limit);
  ASSERT_TRUE(victim.ok()) << knit::failure_message(victim);
  EXPECT_EQ(victim.value(), "mine");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  const auto after = knit::current_process_stats();
  if (jam.ok()) {
    EXPECT_EQ(after.protocol_kills - before.protocol_kills, 1u);
    EXPECT_EQ(after.calls_resent - before.calls_resent, 1u);
  }
}

}  // namespace

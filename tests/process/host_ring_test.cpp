// The host <-> child ring (src/process/host_ring.hpp, process_options::host_ring): calls go
// from the host's thread to its children with no pool worker thread between; each window
// of its protocol is forced with a hook (set_ring_hook) and named after what it guards.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/host_ring.hpp"
#include "process/process_helpers.hpp"
#include "process/shared_region.hpp"

namespace {

using namespace std::chrono_literals;
using knit_test::process_call;
using knit_test::run_calls;
using knit_test::run_one;

// Turns the ring on for the pools a test builds (read when the pool attaches its host).
class process_host_ring : public ::testing::Test {
 protected:
  void SetUp() override {
    knit::process_options o;
    o.host_ring = true;
    knit::set_process_options(o);
  }
  void TearDown() override {
    knit::detail::set_ring_hook(nullptr);
    knit::set_process_options({});
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
  knit::detail::set_ring_hook([](knit::detail::ring_point p, knit::detail::region_header& h) {
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
  knit::detail::set_ring_hook([](knit::detail::ring_point p, knit::detail::region_header& h) {
    if (p != knit::detail::ring_point::host_read_answers || answered_behind != 0) return;
    const std::uint64_t seq = knit::detail::load(h.request_seq);
    if (within_5s(
            [&] { return knit::detail::load(h.answer_seq, std::memory_order_acquire) == seq; })) {
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
  // The replacement up before the next call, whose deadline must find it running, not
  // waiting for a start (a slow start under a sanitizer outlasts 100 ms).
  ASSERT_TRUE(run_one(pool, "pid", "").ok());
  knit::call_options deadline;
  deadline.timeout = 100ms;
  r = run_one(pool, "sleep_pid", "10000", deadline);
  EXPECT_EQ(r.error(), knit::errc::timed_out);
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

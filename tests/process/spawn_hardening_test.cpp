// What a task compromised by its input cannot do to its host (spawn.hpp, namespaces.hpp,
// child_output.hpp, slot_bell.hpp), each attack a task of hostile_tasks.cpp: it fails at most
// its own call, and the host lives and answers the next calls.
//   - its stdio is not the host's: fcntl(F_SETOWN host, F_SETSIG SIGKILL, O_ASYNC) on fds 1
//     and 2 and a flood of writes leave the host's stderr (a pipe here) as it was;
//   - a flood of output reaches the host's stderr at the forwarder's rate, prefixed, while
//     the host answers other calls at once;
//   - the request bell cannot be made to block the host's ring;
//   - /proc/<host>/mem and environ cannot be opened from a strict child;
//   - abort() in a strict child (pid 1 of its namespace) is still a crash by a signal.
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/child_output.hpp"
#include "process/process_helpers.hpp"
#include "process/spawn.hpp"

namespace {

using namespace std::chrono_literals;
using knit_test::process_call;
using knit_test::run_calls;
using knit_test::run_one;
using steady = std::chrono::steady_clock;

knit::process_options strict_options() {
  knit::process_options o;
  o.sandbox = knit::process_sandbox::strict;
  o.lanes = 2;
  o.crash_loop_crashes = 100;  // one bad call each: no backoff involved
  return o;
}

// The host's fd 2 made a pipe for the test's length, read by a thread so that no writer
// blocks on it, then put back. stop() returns what was written to it.
class stderr_capture {
 public:
  stderr_capture() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    saved_ = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[1]);
    read_ = fds[0];
    reader_ = std::thread([this] { read_all(); });
  }
  ~stderr_capture() { stop(); }
  stderr_capture(const stderr_capture&) = delete;
  stderr_capture& operator=(const stderr_capture&) = delete;

  // What was written so far.
  std::string text() {
    std::lock_guard lock(mutex_);
    return text_;
  }

  // Waits until nothing more was written for `quiet` (at most `limit`).
  void wait_quiet(std::chrono::milliseconds quiet, std::chrono::seconds limit) {
    const auto end = steady::now() + limit;
    std::size_t seen = text().size();
    auto since = steady::now();
    while (steady::now() < end && steady::now() - since < quiet) {
      std::this_thread::sleep_for(20ms);
      const std::size_t now = text().size();
      if (now != seen) {
        seen = now;
        since = steady::now();
      }
    }
  }

  std::string stop() {
    if (saved_ >= 0) {
      ::dup2(saved_, STDERR_FILENO);
      ::close(saved_);
      saved_ = -1;
      stopping_ = true;  // EOF may never come: a child that shared fd 2 would hold it open
      reader_.join();
      ::close(read_);
    }
    std::lock_guard lock(mutex_);
    return text_;
  }

 private:
  void read_all() {
    char buf[64 * 1024];
    for (;;) {
      pollfd p{read_, POLLIN, 0};
      if (::poll(&p, 1, 50) == 0) {
        if (stopping_) return;
        continue;
      }
      const ssize_t n = ::read(read_, buf, sizeof buf);
      if (n <= 0) return;
      std::lock_guard lock(mutex_);
      text_.append(buf, static_cast<std::size_t>(n));
    }
  }

  int saved_ = -1;
  int read_ = -1;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::string text_;
  std::thread reader_;
};

ino_t inode_of(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? st.st_ino : 0;
}

// The host's stdio is not the child's: fd 0 is /dev/null, 1 and 2 a pipe of the child's
// own. A task that aims them at the host (F_SETOWN host, F_SETSIG SIGKILL, O_ASYNC,
// O_NONBLOCK) and writes a lot changes nothing the host holds, fails at most its own call,
// and the host answers the next calls.
TEST(spawn_hardening, a_task_cannot_turn_the_hosts_stderr_against_it) {
  knit_test::use_process_options(strict_options());
  stderr_capture capture;
  const int flags_before = ::fcntl(STDERR_FILENO, F_GETFL);
  knit::pool pool(knit_test::threads(1));
  auto identity = run_one(pool, "hostile_stdio_identity", "");
  ASSERT_TRUE(identity.ok()) << knit::failure_message(identity);
  std::istringstream in(identity.value());
  ino_t child[3] = {};
  in >> child[0] >> child[1] >> child[2];
  struct stat null {};
  ASSERT_EQ(::stat("/dev/null", &null), 0);
  EXPECT_EQ(child[0], null.st_ino) << "the child's stdin is not /dev/null";
  for (int fd : {1, 2}) {
    EXPECT_NE(child[fd], inode_of(STDOUT_FILENO)) << "the child's fd " << fd << " is ours";
    EXPECT_NE(child[fd], inode_of(STDERR_FILENO)) << "the child's fd " << fd << " is ours";
  }
  // The attack aims F_SETOWN at this process: only a PID namespace (the child cannot name
  // us) or a filter that refuses F_SETOWN (the probe's call then fails) stops a SIGKILL on
  // a read of the pipe. With neither, this test fails here rather than kill the binary.
  auto probe = run_one(pool, "hostile_setown_probe", "");
  const bool setown_refused = !probe.ok() && probe.error() == knit::errc::sandbox_violation;
  if (!knit::detail::current_confinement().namespaces && !setown_refused) {
    ADD_FAILURE() << "no PID namespace (" << knit::detail::current_confinement().why_not
                  << ") and the sandbox allows F_SETOWN: a task could SIGKILL its host";
    return;
  }
  knit::call_options deadline;
  deadline.timeout = 10s;
  auto attack = run_one(pool, "hostile_stdio", std::to_string(::getpid()), deadline);
  if (!attack.ok()) {
    EXPECT_EQ(attack.error(), knit::errc::sandbox_violation) << knit::failure_message(attack);
  }
  EXPECT_EQ(::fcntl(STDERR_FILENO, F_GETFL), flags_before) << "O_ASYNC or O_NONBLOCK on ours";
  EXPECT_EQ(::fcntl(STDERR_FILENO, F_GETSIG), 0);
  EXPECT_EQ(::fcntl(STDERR_FILENO, F_GETOWN), 0);
  for (int i = 0; i < 3; ++i) {
    auto echo = run_one(pool, "echo", "after " + std::to_string(i));
    ASSERT_TRUE(echo.ok()) << knit::failure_message(echo);
    EXPECT_EQ(echo.value(), "after " + std::to_string(i));
  }
}

// A child writing to stderr without end reaches the host's stderr at the forwarder's rate
// (64 KiB a second, a line at a time, prefixed, "held back" said once) while the host
// answers a call in its other child at once; the writer only fills its own pipe.
TEST(spawn_hardening, a_flood_of_child_output_is_bounded_and_the_host_answers_meanwhile) {
  knit_test::use_process_options({});
  stderr_capture capture;
  std::optional<knit::pool> pool_holder(std::in_place, knit_test::threads(2));
  knit::pool& pool = *pool_holder;
  std::optional<knit::process_workers> workers(std::in_place, pool);
  const auto t0 = steady::now();
  std::string flood_result;
  steady::time_point flood_done{};
  steady::time_point echo_done{};
  int done = 0;
  ASSERT_FALSE(
      knit::submit_process(pool, "hostile_flood", "2500", [&](knit::result<std::string> r) {
        flood_result = r.ok() ? r.value() : knit::failure_message(r);
        flood_done = steady::now();
        ++done;
      }));
  std::this_thread::sleep_for(200ms);  // the flood under way
  const auto echo_sent = steady::now();
  ASSERT_FALSE(knit::submit_process(pool, "echo", "meanwhile", [&](knit::result<std::string> r) {
    EXPECT_TRUE(r.ok()) << knit::failure_message(r);
    echo_done = steady::now();
    ++done;
  }));
  while (done < 2 && steady::now() - t0 < 30s) {
    pollfd fd{pool.completion_fd(), POLLIN, 0};
    ::poll(&fd, 1, 10);
    pool.drain();
  }
  ASSERT_EQ(done, 2);
  EXPECT_LT(echo_done - echo_sent, 1s) << "the host did not answer while a child flooded";
  const double seconds = std::chrono::duration<double>(steady::now() - t0).count();
  const std::string text = capture.text();
  // The rest of the flood (what its pipe still held) drains after the children end; it is
  // captured too, so that it does not land in the test's own output.
  workers.reset();
  pool_holder.reset();
  capture.wait_quiet(1500ms, 10s);
  capture.stop();
  const std::size_t written = std::stoul(flood_result);
  // Payload that reached us: the flood's lines, 100 bytes each with their newline.
  std::size_t lines = 0;
  std::size_t held_notes = 0;
  std::size_t unprefixed = 0;
  std::istringstream lines_in(text);
  for (std::string line; std::getline(lines_in, line);) {
    if (line.find("output held back (over 64 KiB/s)") != std::string::npos) ++held_notes;
    if (line.find("ffff") == std::string::npos) continue;
    ++lines;
    if (line.rfind("knit-proc-", 0) != 0 || line.find(" (pid ") == std::string::npos) {
      ++unprefixed;
    }
  }
  const std::size_t forwarded = lines * 100;
  const std::size_t bound =
      knit::detail::child_output_bytes_per_second * (static_cast<std::size_t>(seconds) + 2);
  EXPECT_LE(forwarded, bound) << seconds << " s";
  EXPECT_GT(written, forwarded) << "the flood was never held back";
  EXPECT_GT(forwarded, 0u) << "nothing of the child's output reached the host";
  EXPECT_EQ(unprefixed, 0u);
  EXPECT_EQ(held_notes, 1u);
}

// The request bell: a task writes 0xfffffffffffffffe into every fd that could be it, sets
// child_sleeping and sleeps 10 s without draining anything. The host's next ring (a call
// sent into the child's second lane once the task is at it) must not block: both calls end
// by their 2 s deadline (the task's child killed, the call behind it sent to the
// replacement), and a new call is answered, all well before the task would have woken.
TEST(spawn_hardening, a_task_cannot_make_the_request_bell_block_the_host) {
  knit_test::use_process_options(strict_options());
  knit::pool pool(knit_test::threads(1));
  ASSERT_TRUE(run_one(pool, "echo", "warm").ok());
  knit::call_options deadline;
  deadline.timeout = 2s;
  std::optional<knit::result<std::string>> hostile;
  std::optional<knit::result<std::string>> behind;
  auto pump_until = [&](auto done, steady::time_point until) {
    while (!done() && steady::now() < until) {
      pollfd fd{pool.completion_fd(), POLLIN, 0};
      ::poll(&fd, 1, 10);
      pool.drain();
    }
  };
  const auto t0 = steady::now();
  ASSERT_FALSE(knit::submit_process(
      pool, "hostile_bell", "10000", [&](knit::result<std::string> r) { hostile.emplace(r); },
      deadline));
  pump_until([] { return false; }, t0 + 300ms);  // the task has set its traps by now
  ASSERT_FALSE(knit::submit_process(
      pool, "echo", "behind", [&](knit::result<std::string> r) { behind.emplace(r); }, deadline));
  pump_until([&] { return hostile && behind; }, t0 + 30s);
  ASSERT_TRUE(hostile && behind) << "the host is stuck";
  auto after = run_one(pool, "echo", "after");
  const auto took = steady::now() - t0;
  ASSERT_TRUE(after.ok()) << knit::failure_message(after);
  EXPECT_LT(took, 6s) << "the host waited for the task (its ring blocked)";
  ASSERT_FALSE(hostile->ok());
  EXPECT_EQ(hostile->error(), knit::errc::timed_out) << knit::failure_message(*hostile);
  if (!behind->ok()) {
    EXPECT_EQ(behind->error(), knit::errc::timed_out) << knit::failure_message(*behind);
  }
}

// /proc/<host>/mem and /proc/<host>/environ from a strict child: neither opens (the host is
// undumpable and the child holds no capability over the host's user namespace; in its own
// PID namespace with its own /proc the host is not even listed).
TEST(spawn_hardening, a_strict_task_cannot_read_the_hosts_memory_or_environment) {
  knit_test::use_process_options(strict_options());
  knit::pool pool(knit_test::threads(1));
  auto r = run_one(pool, "hostile_proc", std::to_string(::getpid()));
  ASSERT_TRUE(r.ok()) << knit::failure_message(r);
  EXPECT_EQ(r.value().find("mem: ok"), std::string::npos) << r.value();
  EXPECT_EQ(r.value().find("environ: ok"), std::string::npos) << r.value();
  const knit::detail::confinement c = knit::detail::current_confinement();
  EXPECT_TRUE(c.host_undumpable);
  EXPECT_EQ(::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
  EXPECT_EQ(c.namespaces, c.why_not.empty()) << c.why_not;
  if (c.namespaces && c.private_proc_not.empty()) {
    EXPECT_NE(r.value().find("listed: No such file"), std::string::npos) << r.value();
  }
}

// A strict child is pid 1 of its PID namespace, where a signal it sends itself without a
// handler is ignored: abort() still ends it by a signal (glibc's last resort, a fault), a
// crash of its own call only.
TEST(spawn_hardening, abort_in_a_strict_task_is_still_a_crash_by_a_signal) {
  knit_test::use_process_options(strict_options());
  knit::pool pool(knit_test::threads(1));
  auto crash = run_one(pool, "abort", "");
  ASSERT_FALSE(crash.ok());
  EXPECT_EQ(crash.error(), knit::errc::worker_crashed) << knit::failure_message(crash);
  EXPECT_NE(knit::failure_message(crash).find("killed by signal"), std::string::npos)
      << knit::failure_message(crash);
  auto echo = run_one(pool, "echo", "after");
  ASSERT_TRUE(echo.ok()) << knit::failure_message(echo);
}

}  // namespace

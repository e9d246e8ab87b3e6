// Identity from /proc: passes for the server we started, fails for any other PID.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include "driver/run/cpu_list.hpp"
#include "driver/run/plan.hpp"
#include "driver/system/identity.hpp"
#include "driver/system/port.hpp"
#include "driver/system/spawn.hpp"

namespace knit::bench {
namespace {

// Starts the fake server on a free port with a case's environment; stops it on scope exit.
struct fake_server {
  pid_t pid = -1;
  int port = 0;
  std::map<std::string, std::string> env;
  std::string log = ::testing::TempDir() + "fake_server_identity.log";
  explicit fake_server(std::map<std::string, std::string> extra = {}) {
    port = pick_free_port();
    plan_case c;
    c.tag = "t2";
    c.threads = 2;
    c.spin = "0";
    env = server_env(c, "127.0.0.1", port);
    for (auto& [k, v] : extra) env[k] = v;
    spawn_spec sp;
    sp.exe = KNIT_FAKE_SERVER;
    sp.argv = {KNIT_FAKE_SERVER};
    sp.env = child_environment(env);
    sp.output_path = log;
    pid = spawn_process(sp);
    for (int i = 0; i < 500 && !tcp_connect_ok("127.0.0.1", port, 100); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ~fake_server() {
    if (pid > 0) stop_process(pid, 5);
  }
  expected_identity expected() const { return {KNIT_FAKE_SERVER, {KNIT_FAKE_SERVER}, env}; }
};

TEST(identity, PassesForTheServerWeStarted) {
  fake_server s;
  auto problems = check_process_identity(s.pid, s.expected());
  EXPECT_TRUE(problems.empty()) << problems.front();
  auto sock = check_socket_owner(s.pid, s.port);
  EXPECT_TRUE(sock.empty()) << sock.front();
  EXPECT_EQ(read_environ(s.pid)->at("KNIT_SPIN"), "0");
}

TEST(identity, FailsForTheTestsOwnPid) {
  fake_server s;
  auto problems = check_process_identity(::getpid(), s.expected());
  ASSERT_FALSE(problems.empty());
  bool exe_reported = false;
  for (const auto& p : problems)
    if (p.find("exe is") != std::string::npos) exe_reported = true;
  EXPECT_TRUE(exe_reported);
  // And we do not own the fake's listening socket.
  EXPECT_FALSE(check_socket_owner(::getpid(), s.port).empty());
}

TEST(identity, FailsForAChildSleepWithTheRightEnvironment) {
  fake_server s;
  spawn_spec sp;
  sp.exe = "/bin/sleep";
  sp.argv = {"/bin/sleep", "30"};
  sp.env = child_environment(s.env);  // same KNIT_* as the server: only exe/cmdline differ
  pid_t sleeper = spawn_process(sp);
  auto problems = check_process_identity(sleeper, s.expected());
  stop_process(sleeper, 5);
  ASSERT_GE(problems.size(), 2u);
  EXPECT_NE(problems[0].find("exe is"), std::string::npos) << problems[0];
  EXPECT_NE(problems[1].find("cmdline"), std::string::npos) << problems[1];
}

TEST(identity, EnvironmentMismatchesAreReported) {
  fake_server s(std::map<std::string, std::string>{{"KNIT_STEAL", "0"}});
  expected_identity want = s.expected();
  want.env.erase("KNIT_STEAL");    // server has a KNIT_* we did not ask for
  want.env["KNIT_THREADS"] = "4";  // and a different pool size
  auto problems = check_process_identity(s.pid, want);
  ASSERT_EQ(problems.size(), 2u);
  std::string all = problems[0] + "\n" + problems[1];
  EXPECT_NE(all.find("KNIT_THREADS=\"2\", expected \"4\""), std::string::npos) << all;
  EXPECT_NE(all.find("unexpected KNIT_STEAL"), std::string::npos) << all;
}

TEST(identity, ExitedProcessIsReported) {
  spawn_spec sp;
  sp.exe = "/bin/true";
  sp.argv = {"/bin/true"};
  pid_t pid = spawn_process(sp);
  // Wait for the exit without reaping it (WNOWAIT): from here until wait_exit the PID is a
  // zombie of ours, so the check has exactly one right answer and must give it.
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);
  ASSERT_EQ(info.si_pid, pid);
  const auto problems = check_process_identity(pid, {"/bin/true", {"/bin/true"}, {}});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("has exited (zombie)"), std::string::npos) << problems[0];
  ASSERT_TRUE(wait_exit(pid, 5).has_value());
}

// spawn_process() returns at the CLOEXEC pipe's EOF; the identity check runs right after.
// Whatever exec still does after closing the pipe must not be visible as an empty cmdline
// or environment. Many spawns, each checked at once, with the window made as wide as we
// can: a long environment (20,000 strings for the kernel to lay out) and, for half of the
// spawns, one CPU shared with this thread, so the pipe's wake-up may preempt the child.
TEST(spawn, IdentityIsCompleteTheMomentSpawnReturns) {
  const std::map<std::string, std::string> env{
      {"KNIT_THREADS", "2"}, {"KNIT_SPIN", "0"}, {"PORT", "1"}};
  const std::vector<std::string> argv{"/bin/sleep", "30"};
  const expected_identity want{"/bin/sleep", argv, env};
  cpu_set_t original;
  ASSERT_EQ(::sched_getaffinity(0, sizeof original, &original), 0);
  const int cpu = ::sched_getcpu();
  ASSERT_GE(cpu, 0);
  std::vector<std::string> filled_env = child_environment(env);
  for (int i = 0; i < 20000; ++i) filled_env.push_back("FILL" + std::to_string(i) + "=x");
  constexpr int kSpawns = 200;
  int failures = 0;
  std::string first_failure;
  for (int i = 0; i < kSpawns; ++i) {
    spawn_spec sp;
    sp.exe = "/bin/sleep";
    sp.argv = argv;
    sp.env = filled_env;
    const bool same_cpu = i % 2 == 1;
    if (same_cpu) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
      sp.cpus = {cpu};
    }
    pid_t pid = spawn_process(sp);
    auto problems = check_process_identity(pid, want);
    if (same_cpu) ::sched_setaffinity(0, sizeof original, &original);
    stop_process(pid, 5);
    if (!problems.empty() && failures++ == 0) first_failure = problems.front();
  }
  EXPECT_EQ(failures, 0) << "of " << kSpawns << " spawns; first: " << first_failure;
}

// A program that exits at once can die between the identity check's first look at
// /proc/PID/stat and its reads of exe, cmdline and environ, which then come back
// unreadable or empty. That must be reported as the exit it is, never as a process with
// the wrong command line and an empty environment.
TEST(identity, ProcessExitingDuringTheCheckIsReportedAsExited) {
  const expected_identity want{"/bin/true", {"/bin/true"}, {{"KNIT_THREADS", "2"}}};
  int checked_while_exiting = 0;
  for (int i = 0; i < 200; ++i) {
    spawn_spec sp;
    sp.exe = "/bin/true";
    sp.argv = {"/bin/true"};
    sp.env = child_environment(want.env);
    pid_t pid = spawn_process(sp);
    auto problems = check_process_identity(pid, want);
    wait_exit(pid, 5);
    if (problems.empty()) continue;  // checked while it still ran: everything matched
    ++checked_while_exiting;
    ASSERT_EQ(problems.size(), 1u) << problems[0] << " | " << problems[1];
    EXPECT_NE(problems[0].find("exited"), std::string::npos) << problems[0];
  }
  std::cout << checked_while_exiting << " of 200 checks met an exiting process\n";
}

TEST(spawn, CpuListsAndEnvironment) {
  EXPECT_EQ(parse_cpu_list("0-3,6"), (std::vector<int>{0, 1, 2, 3, 6}));
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 6}), "0-3,6");
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_THROW(parse_cpu_list("a-b"), std::invalid_argument);
  EXPECT_THROW(parse_cpu_list("3-1"), std::invalid_argument);
  ::setenv("KNIT_SPIN", "999", 1);  // a stray export in the caller's shell
  auto env = child_environment({{"KNIT_THREADS", "2"}});
  ::unsetenv("KNIT_SPIN");
  EXPECT_EQ(std::count(env.begin(), env.end(), "KNIT_THREADS=2"), 1);
  for (const auto& kv : env) EXPECT_NE(kv.rfind("KNIT_SPIN=", 0), 0u) << kv;
}

TEST(spawn, AffinityIsSetBeforeExec) {
  spawn_spec sp;
  sp.exe = "/bin/sleep";
  sp.argv = {"/bin/sleep", "30"};
  sp.cpus = {0};
  pid_t pid = spawn_process(sp);
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line, allowed;
  while (std::getline(status, line))
    if (line.rfind("Cpus_allowed_list:", 0) == 0) allowed = line.substr(line.find(':') + 1);
  stop_process(pid, 5);
  allowed.erase(0, allowed.find_first_not_of(" \t"));
  EXPECT_EQ(allowed, "0");
}

TEST(spawn, ExecFailureIsAnError) {
  spawn_spec sp;
  sp.exe = "/nonexistent/knit-server";
  EXPECT_THROW(spawn_process(sp), std::runtime_error);
}

}  // namespace
}  // namespace knit::bench

// The host killed with SIGKILL leaves no worker process behind after 1 s: a helper host
// (this binary, --host-helper) starts two children, one idle (its pipe's EOF ends it) and
// one inside a long task (PDEATHSIG ends it), and is killed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "process/process_helpers.hpp"

extern char** environ;

namespace {

TEST(process_host_death_test, no_worker_outlives_a_killed_host_by_a_second) {
  int out[2];
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  char exe[] = "/proc/self/exe";
  char mode[] = "--host-helper";
  char* argv[] = {exe, mode, nullptr};
  pid_t host = -1;
  ASSERT_EQ(::posix_spawn(&host, exe, &actions, nullptr, argv, environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  FILE* from_host = ::fdopen(out[0], "r");
  ASSERT_NE(from_host, nullptr);
  std::vector<int> workers;
  char line[128];
  while (std::fgets(line, sizeof line, from_host)) {
    if (std::string(line) == "ready\n") break;
    workers.push_back(std::stoi(line));  // throws (fails the test) on an error line
  }
  ASSERT_EQ(workers.size(), 2u);
  for (int pid : workers) {
    EXPECT_EQ(knit_test::process_comm(pid).rfind("knit-proc-", 0), 0u) << pid;
  }
  ASSERT_EQ(::kill(host, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(host, &status, 0), host);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  std::fclose(from_host);
  // Gone, or a zombie of whoever adopted it (an init that does not reap): not running.
  auto running = [](int pid) {
    const char s = knit_test::process_state(pid);
    return s != 0 && s != 'Z' && s != 'X';
  };
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (int pid : workers) {
    while (running(pid) && std::chrono::steady_clock::now() < limit) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_FALSE(running(pid)) << "knit worker " << pid << " outlived its host by 1 s";
  }
}

}  // namespace

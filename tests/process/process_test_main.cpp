// process_test's main: registers the test tasks, then knit::worker_main (a child never
// returns from it), then either the helper host of the host-death test (--host-helper) or
// the tests.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/process_helpers.hpp"
#include "process/test_tasks.hpp"

namespace {

// A host with two children, one idle and one in a long task, that prints their pids and
// "ready", then waits to be killed (host_death_test.cpp kills it with SIGKILL).
int host_helper() {
  knit::pool pool(knit_test::threads(2));
  // Both children up before the calls: each call then goes to an idle one of its own (a
  // child still starting would leave the second call in the first child's lane).
  knit::process_workers workers(pool);
  std::string pids[2];
  int done = 0;
  // Two calls that overlap, one in each child.
  for (std::string& out : pids) {
    auto ec = knit::submit_process(pool, "sleep_pid", "300", [&](knit::result<std::string> r) {
      out = r.ok() ? r.value() : "error: " + knit::failure_message(r);
      ++done;
    });
    if (ec) return 3;
  }
  while (done < 2) {
    pollfd fd{pool.completion_fd(), POLLIN, 0};
    ::poll(&fd, 1, 100);
    pool.drain();
  }
  // One child stays busy: its death then rests on PDEATHSIG, the idle one's on the pipe.
  (void)knit::submit_process(pool, "sleep_pid", "600000", [](knit::result<std::string>) {});
  std::printf("%s\n%s\nready\n", pids[0].c_str(), pids[1].c_str());
  std::fflush(stdout);
  for (;;) ::pause();
}

}  // namespace

int main(int argc, char** argv) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // Under ASan or TSan the children would turn a SIGSEGV into a report and an exit or
  // abort; the tests check the signal itself, so the children (which inherit the
  // environment) leave SEGV and abort to the kernel. Set before any thread exists.
#if defined(__SANITIZE_ADDRESS__)
  const char* variable = "ASAN_OPTIONS";
#else
  const char* variable = "TSAN_OPTIONS";
#endif
  if (argc < 2 || std::string_view(argv[1]) != "--knit-process-worker") {
    std::string options = std::getenv(variable) ? std::getenv(variable) : "";
    ::setenv(variable, (options + ":handle_segv=0:handle_abort=0").c_str(), 1);
  }
#endif
  knit_test::register_test_tasks();
  if (knit::worker_main(argc, argv)) return 0;
  if (argc == 2 && std::string_view(argv[1]) == "--host-helper") return host_helper();
  testing::InitGoogleTest(&argc, argv);
  // Each test starts from the default process options (knit_test::use_process_options).
  struct reset_options : testing::EmptyTestEventListener {
    void OnTestStart(const testing::TestInfo&) override {
      knit_test::test_process_options() = knit::process_options{};
    }
  };
  testing::UnitTest::GetInstance()->listeners().Append(new reset_options);
  return RUN_ALL_TESTS();
}

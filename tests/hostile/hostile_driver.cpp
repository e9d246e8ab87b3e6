// The host side of tests/hostile (hostile_driver.hpp).
#include "hostile_driver.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>
#include <utility>

namespace hostile {
namespace {

using namespace std::chrono_literals;

std::atomic<int> passed{0};
std::atomic<int> failed{0};

// The watchdog's view of the check in progress.
std::mutex check_mutex;
std::string check_name = "start-up";
steady::time_point check_deadline = steady::time_point::max();
steady::time_point program_deadline = steady::time_point::max();

std::string cut(std::string s, std::size_t most = 160) {
  for (char& c : s) c = (c == '\n' || c == '\0') ? ' ' : c;
  if (s.size() > most) s = s.substr(0, most) + "...";
  return s;
}

}  // namespace

std::string call_record::describe() const {
  if (submit_error) return "submit refused: " + submit_error.message();
  if (!result) return "no answer yet";
  if (result->ok()) return "ok '" + cut(result->value()) + "'";
  return result->error().message() + ": " + cut(knit::failure_message(*result));
}

host::host(unsigned threads, unsigned lanes) {
  knit::pool_options o;
  o.threads = threads;
  o.process.sandbox = knit::process_sandbox::strict;
  o.process.lanes = lanes;
  o.stop_timeout = 2s;  // a wedged pool must not hang its destructor past the watchdog
  pool_ = std::make_unique<knit::pool>(o);
  workers_ = std::make_unique<knit::process_workers>(*pool_);
}

host::~host() {
  workers_.reset();
  pool_.reset();
}

call_record& host::submit(std::string task, std::string input,
                          std::chrono::milliseconds stuck_after) {
  call_record& call = calls_.emplace_back();
  call.task = task;
  call.input = input;
  call.submitted = steady::now();
  knit::call_options options;
  options.stuck_after = stuck_after;
  call.submit_error = knit::submit_process(
      *pool_, std::move(task), std::move(input),
      [&call](knit::result<std::string> r) {
        call.answered = steady::now();
        call.result.emplace(std::move(r));
      },
      options);
  return call;
}

bool host::wait(const std::function<bool()>& done, steady::duration bound) {
  const auto until = steady::now() + bound;
  while (!done()) {
    const auto left = until - steady::now();
    if (left <= steady::duration::zero()) return false;
    // At most 100 ms at a time: a stuck limit passing is noticed by the next drain.
    const auto ms = std::clamp<long>(
        std::chrono::duration_cast<std::chrono::milliseconds>(left).count(), 1, 100);
    pollfd fd{pool_->completion_fd(), POLLIN, 0};
    ::poll(&fd, 1, static_cast<int>(ms));
    pool_->drain();
  }
  return true;
}

bool host::wait(const call_record& call, steady::duration bound) {
  return wait([&call] { return call.done(); }, bound);
}

void host::idle(steady::duration period) {
  wait([] { return false; }, period);
}

bool host::echo_ok(const std::string& input, steady::duration bound, std::string& why) {
  const call_record& call = submit("echo", input);
  if (!wait(call, bound)) {
    why = "echo '" + input + "' not answered within bound";
    return false;
  }
  if (call.ok_with(input)) return true;
  why = "echo '" + input + "': " + call.describe();
  return false;
}

void pass(const std::string& name) {
  ++passed;
  std::printf("PASS %s\n", name.c_str());
  std::fflush(stdout);
}

void fail(const std::string& name, const std::string& why) {
  ++failed;
  std::printf("FAIL %s: %s\n", name.c_str(), cut(why, 400).c_str());
  std::fflush(stdout);
}

void note(const std::string& name, const std::string& what) {
  std::fprintf(stderr, "hostile: %s: %s\n", name.c_str(), cut(what, 400).c_str());
}

int summary() {
  std::printf("%d passed, %d failed\n", passed.load(), failed.load());
  std::fflush(stdout);
  return failed.load() > 0 ? 1 : 0;
}

void start_watchdog(steady::duration program_budget) {
  {
    std::lock_guard lock(check_mutex);
    program_deadline = steady::now() + program_budget;
  }
  std::thread([] {
    for (;;) {
      std::this_thread::sleep_for(100ms);
      std::string name;
      bool whole = false;
      {
        std::lock_guard lock(check_mutex);
        const auto now = steady::now();
        if (now < check_deadline && now < program_deadline) continue;
        name = check_name;
        whole = now >= program_deadline;
      }
      fail(name, whole ? "the program ran past its budget (the host blocked or hung?)"
                       : "did not finish within its budget (the host blocked or hung?)");
      summary();
      ::_exit(1);  // the host may be blocked for ever: no destructors
    }
  }).detach();
}

void begin_check(const std::string& name, steady::duration budget) {
  std::lock_guard lock(check_mutex);
  check_name = name;
  check_deadline = steady::now() + budget;
}

}  // namespace hostile

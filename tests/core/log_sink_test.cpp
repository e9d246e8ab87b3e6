// knit::set_log_sink (knit/log.hpp): the library's own lines go to the sink the program set
// and nothing reaches stderr; without one they go to stderr, one write a line; a sink that
// throws loses no line; set_log_sink returns only once no line is inside the previous sink.
//
// The line used is a worker's "could not pin" (worker_cpus {1023}: no such CPU here), said
// by the pool's constructor as it starts the worker, so it comes before the checks: no wait
// on time.
#include "knit/log.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fcntl.h>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "knit/pool.hpp"
#include "support/gate.hpp"

namespace {

constexpr std::string_view kLine =
    "knit: worker 0: could not pin to CPU 1023 (continuing unpinned)";

knit::pool_options unpinnable() {
  knit::pool_options o;
  o.threads = 1;
  o.worker_cpus = {1023};
  return o;
}

// fd 2 is a pipe while this lives (a test's few lines fit in it); take() puts fd 2 back and
// returns what was written.
class stderr_pipe {
 public:
  stderr_pipe() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
    saved_ = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[1]);
    read_ = fds[0];
  }
  ~stderr_pipe() { take(); }
  stderr_pipe(const stderr_pipe&) = delete;
  stderr_pipe& operator=(const stderr_pipe&) = delete;

  std::string take() {
    if (saved_ < 0) return {};
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    saved_ = -1;
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(read_, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(n));
    ::close(read_);
    return text;
  }

 private:
  int saved_ = -1;
  int read_ = -1;
};

// Keeps every line it is given; puts the default sink back when destroyed.
struct kept_lines {
  std::mutex mutex;
  std::vector<std::string> lines;
  kept_lines() {
    knit::set_log_sink([this](std::string_view line) {
      std::lock_guard lock(mutex);
      lines.emplace_back(line);
    });
  }
  ~kept_lines() { knit::set_log_sink({}); }
};

TEST(log_sink, a_sink_the_program_set_gets_the_line_and_stderr_nothing) {
  stderr_pipe err;
  {
    kept_lines kept;
    { knit::pool p(unpinnable()); }
    std::lock_guard lock(kept.mutex);
    ASSERT_EQ(kept.lines.size(), 1u);
    EXPECT_EQ(kept.lines[0], kLine);
  }
  EXPECT_EQ(err.take(), "");
}

TEST(log_sink, without_one_each_line_goes_to_stderr) {
  {
    kept_lines kept;  // set, then put back: the default again
  }
  stderr_pipe err;
  { knit::pool p(unpinnable()); }
  EXPECT_EQ(err.take(), std::string(kLine) + "\n");
}

TEST(log_sink, a_line_whose_sink_throws_goes_to_stderr) {
  stderr_pipe err;
  knit::set_log_sink([](std::string_view) { throw std::runtime_error("sink down"); });
  { knit::pool p(unpinnable()); }
  knit::set_log_sink({});
  EXPECT_EQ(err.take(), std::string(kLine) + "\n");
}

TEST(log_sink, set_log_sink_returns_once_no_line_is_inside_the_previous_sink) {
  knit_test::gate release;
  std::atomic<bool> entered{false}, left{false}, replacing{false};
  knit::set_log_sink([&](std::string_view) {
    entered = true;
    release.wait();
    left = true;
  });
  std::thread logger([] { knit::pool p(unpinnable()); });  // its worker's line enters the sink
  const bool line_entered = knit_test::eventually([&] { return entered.load(); });
  bool left_when_replaced = false;
  std::thread replacer([&] {
    replacing = true;
    knit::set_log_sink({});
    left_when_replaced = left;
  });
  knit_test::eventually([&] { return replacing.load(); });
  release.open = true;
  replacer.join();
  logger.join();
  ASSERT_TRUE(line_entered) << "the line never reached the sink";
  EXPECT_TRUE(left_when_replaced) << "set_log_sink returned while the old sink still ran";
}

}  // namespace

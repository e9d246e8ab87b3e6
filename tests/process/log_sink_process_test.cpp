// What a process worker writes to its stderr reaches the host program's log sink
// (knit::set_log_sink, knit/log.hpp) as one line, prefixed with the worker's name and pid,
// not the host's stderr.
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "knit/log.hpp"
#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/process_helpers.hpp"

namespace {

TEST(log_sink_process, a_workers_line_reaches_the_sink_prefixed_with_its_name_and_pid) {
  std::mutex mutex;
  std::vector<std::string> lines;
  knit::set_log_sink([&](std::string_view line) {
    std::lock_guard lock(mutex);
    lines.emplace_back(line);
  });
  struct restore_default {
    ~restore_default() { knit::set_log_sink({}); }
  } restore;
  knit::pool pool(knit_test::threads(1));
  auto said = knit_test::run_one(pool, "say", "hello from a worker process");
  ASSERT_TRUE(said.ok()) << knit::failure_message(said);
  const std::string want = " (pid " + said.value() + "): hello from a worker process";
  // The forwarder reads the child's pipe on its own thread: the line comes when it has.
  std::string got;
  const bool arrived = knit_test::within_10s([&] {
    std::lock_guard lock(mutex);
    for (const std::string& line : lines) {
      if (line.ends_with(want)) got = line;
    }
    return !got.empty();
  });
  ASSERT_TRUE(arrived) << "no line ending with '" << want << "' reached the sink";
  EXPECT_TRUE(got.starts_with("knit-proc-")) << got;
  EXPECT_EQ(got.find('\n'), std::string::npos) << "a line is given without its newline";
}

}  // namespace

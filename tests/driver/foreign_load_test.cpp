// Trustworthy windows on a shared machine: the /proc/stat parse, the foreign-load
// arithmetic, the rerun decision, and the row fields (the report's mark: report_test.py).
// Pure parts only: nothing here reads the real /proc/stat or times anything.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/run/plan.hpp"
#include "driver/run/rows.hpp"
#include "driver/run/runner.hpp"
#include "driver/system/cpu_sampler.hpp"

namespace knit::bench {
namespace {

// A /proc/stat as Linux 6.1 prints it, two CPUs, trimmed after the first non-cpu lines.
const char* const kProcStat =
    "cpu  10132 153 4021 881234 312 0 417 85 0 0\n"
    "cpu0 5066 70 2010 440617 150 0 300 40 0 0\n"
    "cpu1 5066 83 2011 440617 162 0 117 45 0 0\n"
    "intr 1234567 0 9 0 0 0\n"
    "ctxt 9876543\n";

TEST(proc_stat, BusyIsUserNiceSystemOfTheAggregateLine) {
  const machine_cpu_sample s = parse_proc_stat(kProcStat, 100.0);
  // (10132 + 153 + 4021) / 100; idle, iowait, irq, softirq (the measured traffic's own
  // loopback network work) and steal are not busy.
  EXPECT_DOUBLE_EQ(s.busy_s, 143.06);
  EXPECT_DOUBLE_EQ(s.steal_s, 0.85);
}

TEST(proc_stat, PerCpuLinesAreNotTakenForTheAggregate) {
  const machine_cpu_sample s =
      parse_proc_stat("cpu0 1 1 1 1 1 1 1 1\ncpu  200 0 100 5 0 0 0 0\n", 100.0);
  EXPECT_DOUBLE_EQ(s.busy_s, 3.0);
}

TEST(proc_stat, MissingOrShortAggregateLineThrows) {
  EXPECT_THROW(parse_proc_stat("cpu0 1 2 3 4 5 6 7 8\nintr 1\n", 100.0), std::runtime_error);
  EXPECT_THROW(parse_proc_stat("cpu  1 2 3 4\n", 100.0), std::runtime_error);
  EXPECT_THROW(parse_proc_stat("", 100.0), std::runtime_error);
}

TEST(foreign_cores, MachineBusyLessServerAndOwnOverWall) {
  const machine_cpu_sample a{10.0, 0, 100.0}, b{12.5, 0, 102.0};
  // 2.5 s busy, 1.0 server, 0.3 driver + generator, over 2 s: 0.6 cores elsewhere.
  EXPECT_DOUBLE_EQ(foreign_cores(a, b, 1.0, 0.3), 0.6);
}

TEST(foreign_cores, TickRoundingBelowZeroReadsAsZero) {
  const machine_cpu_sample a{10.0, 0, 100.0}, b{11.0, 0, 102.0};
  EXPECT_DOUBLE_EQ(foreign_cores(a, b, 0.99, 0.02), 0.0);
}

TEST(foreign_cores, NoElapsedWallIsNoReading) {
  const machine_cpu_sample a{10.0, 0, 100.0}, b{20.0, 0, 100.0};
  EXPECT_DOUBLE_EQ(foreign_cores(a, b, 0, 0), 0.0);
}

TEST(foreign_verdict, KeepsQuietWindowsAndWindowsWithoutAReading) {
  EXPECT_EQ(foreign_verdict(std::nullopt, 0, 0.1, 2), foreign_load_verdict::keep);
  EXPECT_EQ(foreign_verdict(0.0, 0, 0.1, 2), foreign_load_verdict::keep);
  EXPECT_EQ(foreign_verdict(0.1, 0, 0.1, 2),
            foreign_load_verdict::keep);  // at the limit is not over it
}

TEST(foreign_verdict, RerunsABusyWindowWhileRerunsAreLeftThenFlags) {
  EXPECT_EQ(foreign_verdict(0.3, 0, 0.1, 2), foreign_load_verdict::rerun);
  EXPECT_EQ(foreign_verdict(0.3, 1, 0.1, 2), foreign_load_verdict::rerun);
  EXPECT_EQ(foreign_verdict(0.3, 2, 0.1, 2), foreign_load_verdict::flag);
  EXPECT_EQ(foreign_verdict(0.3, 0, 0.1, 0), foreign_load_verdict::flag);  // --foreign-retries 0
  EXPECT_EQ(foreign_verdict(0.05, 2, 0.1, 2), foreign_load_verdict::keep);
}

result_row row_with_foreign(std::optional<double> foreign, int reruns, double limit) {
  plan_case c;
  c.tag = "inline";
  c.server_mode = "inline";
  case_measurement m;
  m.window_s = 5;
  m.foreign_cores = foreign;
  m.foreign_reruns = reruns;
  run_options cfg;
  cfg.foreign_max = limit;
  return build_row(c, 0, m, cfg);
}

TEST(foreign_row, OverTheLimitIsFlaggedWithItsReruns) {
  const result_row r = row_with_foreign(0.2504, 2, 0.1);
  ASSERT_TRUE(r.foreign_cores);
  EXPECT_DOUBLE_EQ(*r.foreign_cores, 0.25);
  EXPECT_EQ(r.foreign_flagged, std::optional<bool>(true));
  EXPECT_EQ(r.foreign_reruns, std::optional<int>(2));
}

TEST(foreign_row, UnderTheLimitIsRecordedNotFlagged) {
  const result_row r = row_with_foreign(0.04, 0, 0.1);
  EXPECT_EQ(r.foreign_flagged, std::optional<bool>(false));
  EXPECT_EQ(r.foreign_reruns, std::optional<int>(0));
}

TEST(foreign_row, NoReadingLeavesTheFieldsOut) {
  const result_row r = row_with_foreign(std::nullopt, 0, 0.1);
  EXPECT_FALSE(r.foreign_cores);
  EXPECT_FALSE(r.foreign_flagged);
  EXPECT_EQ(row_to_json_line(r).find("foreign"), std::string::npos);
}

TEST(foreign_row, FieldsSurviveTheJsonRoundTrip) {
  const result_row r = row_with_foreign(0.3, 1, 0.1);
  const std::string line = row_to_json_line(r);
  EXPECT_NE(line.find("\"foreign_flagged\": true"), std::string::npos) << line;
  const result_row back = row_from_json_line(line);
  EXPECT_EQ(back, r);
  EXPECT_TRUE(back.unknown.empty());
}

}  // namespace
}  // namespace knit::bench

// The renderer must reproduce the reference benchmark's printed tables from its own rows.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "driver/report/report.hpp"
#include "driver/run/rows.hpp"
#include "driver/system/spawn.hpp"

namespace knit::bench {
namespace {

namespace fs = std::filesystem;

std::string reference_markdown() {
  auto rows = read_rows_file(std::string(KNIT_DRIVER_FIXTURES) + "/reference_benchmark_rows.jsonl");
  return render_markdown(rows, nullptr, {}, {});
}

// The text between a heading and the next heading of the same or higher level.
std::string section(const std::string& md, const std::string& heading) {
  auto a = md.find(heading);
  if (a == std::string::npos) return "";
  auto b = md.find("\n### ", a + heading.size());
  return md.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

TEST(reference_report, FixtureHasAllReferenceRows) {
  auto rows = read_rows_file(std::string(KNIT_DRIVER_FIXTURES) + "/reference_benchmark_rows.jsonl");
  ASSERT_EQ(rows.size(), 29u);  // 16 saturating + 13 fixed-rate
}

// Section A of the reference tables, with the bold markers removed and "hono_only" called "inline".
TEST(reference_report, SectionAThroughputMatchesReference) {
  const std::string a = section(reference_markdown(), "### A.");
  ASSERT_FALSE(a.empty());
  for (const char* line : {
           "| inline | 2815 | 2815 | 2578 | 8208 | - | 0.002 | 1.19 | 6909 | 145 |",
           "| threads: 1 | 8486 | 4816 | 4712 | 18014 | +119% | 0.058 | 1.79 | 10041 | 100 |",
           "| threads: 2 | 5785 | 4997 | 5029 | 15811 | +93% | 0.034 | 1.92 | 8244 | 121 |",
           "| threads: 4 | 4763 | 4410 | 4733 | 13906 | +69% | 0.054 | 2.00 | 6944 | 144 |",
           "| threads: 8 | 3946 | 3921 | 3782 | 11649 | +42% | 0.106 | 2.31 | 5046 | 198 |",
           "| threads: 15 | 4032 | 3981 | 3974 | 11987 | +46% | 0.164 | 2.83 | 4238 | 236 |",
       })
    EXPECT_NE(a.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << a;
}

TEST(reference_report, SectionALatencyMatchesReference) {
  const std::string a = section(reference_markdown(), "### A.");
  for (const char* line : {
           "| inline | 35.42 / 42.99 | 35.44 / 42.89 | 35.64 / 74.01 |",
           "| threads: 1 | 11.50 / 22.10 | 19.88 / 40.36 | 20.41 / 41.51 |",
           "| threads: 2 | 16.04 / 27.31 | 17.94 / 44.30 | 17.84 / 43.53 |",
           "| threads: 4 | 19.31 / 31.65 | 20.30 / 49.86 | 19.69 / 32.93 |",
           "| threads: 8 | 25.70 / 36.21 | 25.48 / 39.35 | 25.78 / 52.40 |",
           "| threads: 15 | 23.78 / 36.03 | 24.36 / 38.16 | 24.39 / 40.03 |",
       })
    EXPECT_NE(a.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << a;
}

TEST(reference_report, SectionBPingMatchesReference) {
  const std::string b = section(reference_markdown(), "### B.");
  ASSERT_FALSE(b.empty());
  for (const char* line : {
           "| inline | 0.81 | 16.93 | 1.08 | 0.002 |",
           "| threads: 1 | 0.40 | 2.31 | 1.10 | 0.060 |",
           "| threads: 4 | 0.45 | 3.18 | 1.57 | 0.046 |",
           "| threads: 8 | 0.50 | 2.91 | 1.94 | 0.096 |",
           "| threads: 15 | 0.49 | 3.00 | 2.29 | 0.194 |",
       })
    EXPECT_NE(b.find(line), std::string::npos) << "missing: " << line;
  // /ssr and /jwt tables carry the reference p50/p99 too (reference: hono_only 0.84 / 14.32,
  // threads: 15 0.88 / 4.33).
  EXPECT_NE(b.find("| inline | 0.84 | 14.32 | 1.08 |"), std::string::npos);
  EXPECT_NE(b.find("| threads: 15 | 0.88 | 4.33 | 2.29 |"), std::string::npos);
}

TEST(reference_report, SectionCIdleTableMatchesReference) {
  const std::string c = section(reference_markdown(), "### C.");
  ASSERT_FALSE(c.empty());
  for (const char* line : {
           "| 1 | 0.058 | 0.048 | 0.058 |",
           "| 2 | 0.208 | 0.182 | 0.034 |",
           "| 4 | 0.682 | 0.667 | 0.054 |",
           "| 8 | 2.288 | 2.286 | 0.106 |",
           "| 15 | 6.368 | 6.429 | 0.164 |",
       })
    EXPECT_NE(c.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << c;
}

TEST(reference_report, SectionCLoadedAndBeforeAfterMatchReference) {
  const std::string c = section(reference_markdown(), "### C.");
  for (const char* line : {
           "| 1 | 1.79 | 0.058 | 1.73 |",
           "| 2 | 2.03 | 0.208 | 1.82 |",
           "| 4 | 2.70 | 0.682 | 2.02 |",
           "| 8 | 4.82 | 2.288 | 2.53 |",
           "| 15 | 10.03 | 6.368 | 3.66 |",
           "| `threads: 15` rps/core, saturating | 1048 | 4238 | 4.0x |",
           "| `threads: 15` CPU-us/request, fixed rate | 1984 | 382 | 5.2x less |",
           "| `threads: 15` /ssr p99, fixed rate | 7.84ms | 4.12ms | -47% |",
           "| `threads: 15` idle cores | 6.368 | 0.164 | 39x less |",
           "| `threads: 8` CPU-us/request, fixed rate | 940 | 323 | 2.9x less |",
           "| `threads: 4` CPU-us/request, fixed rate | 415 | 262 | 1.6x less |",
       })
    EXPECT_NE(c.find(line), std::string::npos) << "missing: " << line;
  // Full CPU picture: the default policy row at 15 workers is bold, as in the reference.
  EXPECT_NE(
      c.find("| **no spin (= default policy)** | **0.164** | **2.83** | **4238** | **236** |"),
      std::string::npos);
}

TEST(reference_report, PercentAndRatioFormatting) {
  EXPECT_EQ(pct_change(8208, 18014), "+119%");
  EXPECT_EQ(pct_change(8208, 15811),
            "+93%");  // 92.6 rounds up: the reference rounded, not truncated
  EXPECT_EQ(pct_change(7.84, 4.12), "-47%");
  EXPECT_EQ(ratio_text(1048, 4238, true), "4.0x");
  EXPECT_EQ(ratio_text(1984, 382, false), "5.2x less");
  EXPECT_EQ(ratio_text(6.368, 0.164, false), "39x less");
}

TEST(reference_report, ChartsAreDrawnWhenGnuplotExists) {
  if (find_in_path("gnuplot").empty()) GTEST_SKIP() << "gnuplot not installed";
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("knit-bench-charts-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(std::string(KNIT_DRIVER_FIXTURES) + "/reference_benchmark_rows.jsonl",
                dir / "rows.jsonl", fs::copy_options::overwrite_existing);
  ::unsetenv("KNIT_BENCH_GNUPLOT");
  std::vector<std::string> warnings;
  write_report((dir / "rows.jsonl").string(), true, &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  for (const char* png : {"rps_by_pool_reference.png", "ping_p99_reference.png",
                          "idle_by_n_reference.png", "cpu_per_req_by_n_reference.png"}) {
    EXPECT_TRUE(fs::exists(dir / "charts" / png)) << png;
    EXPECT_GT(fs::file_size(dir / "charts" / png), 0u) << png;
  }
  std::ifstream in(dir / "report.md");
  std::stringstream md;
  md << in.rdbuf();
  EXPECT_NE(md.str().find("](charts/idle_by_n_reference.png)"), std::string::npos);
  fs::remove_all(dir);
}

TEST(reference_report, MissingGnuplotSkipsChartsWithAWarning) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("knit-bench-nocharts-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(std::string(KNIT_DRIVER_FIXTURES) + "/reference_benchmark_rows.jsonl",
                dir / "rows.jsonl", fs::copy_options::overwrite_existing);
  ::setenv("KNIT_BENCH_GNUPLOT", "/nonexistent/gnuplot", 1);
  std::vector<std::string> warnings;
  write_report((dir / "rows.jsonl").string(), true, &warnings);
  ::unsetenv("KNIT_BENCH_GNUPLOT");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("charts skipped"), std::string::npos) << warnings[0];
  EXPECT_FALSE(fs::exists(dir / "charts" / "idle_by_n_reference.png"));
  std::ifstream in(dir / "report.md");
  std::stringstream md;
  md << in.rdbuf();
  EXPECT_NE(md.str().find("charts skipped"), std::string::npos);  // said in the report too
  EXPECT_NE(md.str().find("| inline | 2815 | 2815 | 2578 | 8208 | - |"), std::string::npos);
  fs::remove_all(dir);
}

TEST(reference_report, NoCountersAndNoSweepForReferenceRows) {
  const std::string md = reference_markdown();
  EXPECT_NE(md.find("No pool counters in these rows"), std::string::npos);
  EXPECT_EQ(md.find("## Cost sweep"), std::string::npos);
}

// A pooled saturation row with pool counters, as the runner writes it.
result_row pooled_row(const std::string& tag, double stuck, double replaced, double retired) {
  result_row r;
  r.tag = tag;
  r.mode = "sat";
  r.threads = 1;
  r.server_mode = "pooled";
  r.cost_profile = "native";
  r.total_rps = 1000;
  for (const char* route : {"ping", "ssr", "jwt"}) r.routes[route] = route_row_stats{};
  r.pool_counters = {{"calls_submitted", 1000},
                     {"host_wakes", 250},
                     {"calls_stuck", stuck},
                     {"workers_replaced", replaced},
                     {"retired_running", retired}};
  r.pool_per_call = {
      {"host_wakes", 0.25}, {"calls_stuck", stuck / 1000}, {"workers_replaced", replaced / 1000}};
  return r;
}

TEST(counter_report, StuckCallsShowAsCountsWhenAnyRowHasOne) {
  const std::string md =
      render_markdown({pooled_row("t1", 0, 0, 0), pooled_row("t1b", 3, 3, 1)}, nullptr, {}, {});
  const std::string counters = section(md, "### Pool counters");
  ASSERT_FALSE(counters.empty()) << md;
  // Counts over the window, never "/call" (3 in 1000 calls would print as 0.003).
  EXPECT_NE(counters.find("| calls_stuck | workers_replaced | retired_running |"),
            std::string::npos)
      << counters;
  EXPECT_EQ(counters.find("calls_stuck/call"), std::string::npos) << counters;
  EXPECT_NE(counters.find("| 0.250 | 3 | 3 | 1 |"), std::string::npos) << counters;
  EXPECT_NE(counters.find("| 0.250 | 0 | 0 | 0 |"), std::string::npos) << counters;
}

TEST(counter_report, StuckCallsHiddenWhenZeroEverywhere) {
  const std::string md = render_markdown({pooled_row("t1", 0, 0, 0)}, nullptr, {}, {});
  const std::string counters = section(md, "### Pool counters");
  ASSERT_FALSE(counters.empty()) << md;
  EXPECT_EQ(counters.find("| calls_stuck"), std::string::npos) << counters;
  EXPECT_NE(counters.find("`calls_stuck`"), std::string::npos) << counters;  // listed as zero
}

}  // namespace
}  // namespace knit::bench

// knit-bench run end to end against the fake server and fake load generator: rows,
// meta.json and report.md come out, and the run refuses unsafe situations.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "driver/report/report.hpp"
#include "driver/run/json_write.hpp"
#include "driver/run/plan.hpp"
#include "driver/run/rows.hpp"
#include "driver/run/runner.hpp"
#include "driver/system/single_instance.hpp"
#include "fake_sandbox.hpp"

namespace knit::bench {
namespace {

namespace fs = std::filesystem;
using fakes::sandbox;
using fakes::slurp;

TEST(end_to_end, RunWritesRowsMetaAndReport) {
  sandbox box;
  run_options cfg = box.config();
  ASSERT_EQ(run_benchmark(cfg), 0);
  fs::path out = cfg.out_dir;
  auto rows = read_rows_file((out / "rows.jsonl").string());
  ASSERT_EQ(rows.size(), 10u);
  // Repetitions interleave: the whole plan once, then again.
  EXPECT_EQ(rows[0].rep, 0);
  EXPECT_EQ(rows[4].rep, 0);
  EXPECT_EQ(rows[5].rep, 1);
  EXPECT_EQ(rows[5].tag, "inline");

  const result_row& inline_sat = rows[0];
  EXPECT_EQ(inline_sat.server_mode, "inline");
  EXPECT_EQ(inline_sat.total_rps, 6000);                     // fake: 1000.126 + 2000.126 + 3000.126
  EXPECT_DOUBLE_EQ(inline_sat.routes.at("ping").p50, 1.23);  // 0.0012345 s -> ms, 2 decimals
  EXPECT_DOUBLE_EQ(inline_sat.routes.at("ping").p99, 5.68);
  EXPECT_TRUE(inline_sat.pool_counters.empty());
  EXPECT_EQ(inline_sat.server_env.count("KNIT_THREADS"), 0u);
  EXPECT_DOUBLE_EQ(inline_sat.gen_cores, 0.25);

  const result_row& t2 = rows[1];
  EXPECT_EQ(t2.server_env.at("KNIT_THREADS"), "2");
  EXPECT_EQ(t2.server_env.at("PORT"), std::to_string(cfg.port));
  EXPECT_DOUBLE_EQ(t2.pool_counters.at("calls_submitted"), 1000);
  EXPECT_DOUBLE_EQ(t2.pool_per_call.at("host_wakes"), 0.25);
  EXPECT_GE(t2.os_threads, 3);
  EXPECT_EQ(t2.load_cmd.front(), cfg.load_exe);
  EXPECT_NE(std::find(t2.load_cmd.begin(), t2.load_cmd.end(), "--route"), t2.load_cmd.end());
  EXPECT_TRUE(t2.server_pid.has_value());
  // Every window read the machine's busy CPU (/proc/stat); none was over the test's limit.
  ASSERT_TRUE(t2.foreign_cores.has_value());
  EXPECT_GE(*t2.foreign_cores, 0.0);
  EXPECT_EQ(t2.foreign_flagged, std::optional<bool>(false));
  EXPECT_EQ(t2.foreign_reruns, std::optional<int>(0));
  EXPECT_DOUBLE_EQ(*t2.window_s, 0.3);

  // Rate cases offer 70% of the inline saturating total, split over three routes.
  const result_row& t2rate = rows[4];
  EXPECT_EQ(t2rate.mode, "rate");
  EXPECT_DOUBLE_EQ(*t2rate.rate_per_route, 1400);
  EXPECT_DOUBLE_EQ(*t2rate.routes.at("ssr").rate_target, 1400);
  EXPECT_EQ(t2rate.routes.at("ssr").rate_met, std::optional<bool>(true));
  bool rate_in_cmd = false;
  for (const auto& a : t2rate.load_cmd)
    if (a.find("ssr:POST:/ssr:50:1400:") == 0) rate_in_cmd = true;
  EXPECT_TRUE(rate_in_cmd);
  // Bodies are the reference benchmark's.
  EXPECT_EQ(slurp(out / "bodies/jwt.json"),
            R"({"user":{"id":"u_42","email":"ari@example.com","role":"admin"},"ttlSec":900})");

  auto meta = parse_json(slurp(out / "meta.json"), "meta");
  const auto& run = meta.at("runs").at(0);
  EXPECT_EQ(run.at("status").as_string(), "complete");
  EXPECT_EQ(run.at("rows_written").to_number<int>(), 10);

  std::string md = slurp(out / "report.md");
  EXPECT_NE(md.find("## Cost profile: bun"), std::string::npos);
  EXPECT_NE(md.find("| inline | 1000 | 2000 | 3000 | 6000 | - |"), std::string::npos) << md;
  EXPECT_NE(md.find("knit-bench run --plan test.json"), std::string::npos);
  EXPECT_NE(md.find("host_wakes/call"), std::string::npos);
  EXPECT_NE(md.find("Offered 1400 rps per route"), std::string::npos);

  // Same directory again without --append: refused, rows untouched.
  EXPECT_EQ(run_benchmark(cfg), 2);
  EXPECT_EQ(read_rows_file((out / "rows.jsonl").string()).size(), 10u);

  // report re-renders from rows alone.
  fs::remove(out / "report.md");
  write_report((out / "rows.jsonl").string(), false);
  EXPECT_EQ(slurp(out / "report.md"), md);
}

TEST(end_to_end, NewModesRunAndAModeTheServerDidNotRunIsWarned) {
  sandbox box;
  run_options cfg = box.config();
  cfg.repeat = 1;
  cfg.cases = parse_plan(R"([
    {"tag":"inline","mode":"sat","server_mode":"inline","cost_profile":"bun"},
    {"tag":"a1","mode":"sat","server_mode":"asio","threads":1,"cost_profile":"bun"},
    {"tag":"m2","mode":"sat","server_mode":"multi","threads":2,"cost_profile":"bun"},
    {"tag":"auto1","mode":"sat","server_mode":"auto","threads":1,"cost_profile":"bun"},
    {"tag":"a2","mode":"sat","server_mode":"asio","threads":2,"cost_profile":"bun",
     "env":{"FAKE_REPORT_MODE":"inline"}}
  ])");
  ASSERT_EQ(run_benchmark(cfg), 0);
  auto rows = read_rows_file((fs::path(cfg.out_dir) / "rows.jsonl").string());
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[1].server_env.at("KNIT_MODE"), "asio");
  EXPECT_EQ(rows[1].server_env.at("KNIT_THREADS"), "1");
  EXPECT_EQ(rows[1].reported_mode, std::optional<std::string>("asio"));
  EXPECT_EQ(rows[2].server_env.at("KNIT_MODE"), "multi");
  EXPECT_EQ(rows[3].reported_mode, std::optional<std::string>("auto"));
  EXPECT_EQ(rows[4].reported_mode, std::optional<std::string>("inline"));
  std::string md = slurp(fs::path(cfg.out_dir) / "report.md");
  EXPECT_NE(md.find("| asio: 1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| multi: 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| auto: 1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("### knit vs the peers"), std::string::npos) << md;
  // Only the row whose server ran another mode is named in the warning.
  EXPECT_NE(md.find("> Warning: the server ran another mode than some rows are named for"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("`a2` sat asked for asio, knit-stats said inline"), std::string::npos) << md;
  EXPECT_EQ(md.find("`a1` sat asked for"), std::string::npos) << md;
}

TEST(end_to_end, BusyPortFailsEveryCaseAndMeasuresNothing) {
  sandbox box;
  run_options cfg = box.config();
  cfg.repeat = 1;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(cfg.port));
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  EXPECT_EQ(run_benchmark(cfg), 1);
  ::close(fd);
  EXPECT_FALSE(fs::exists(fs::path(cfg.out_dir) / "rows.jsonl"));
}

TEST(end_to_end, SecondDriverIsRefused) {
  sandbox box;
  run_options cfg = box.config();
  instance_lock held(cfg.lock_path);
  EXPECT_EQ(run_benchmark(cfg), 3);
}

// knit-bench hands report.md to report.py: a script that fails is an error that carries
// what the script said, and a bad row is named with its line.
TEST(end_to_end, AFailingReportScriptIsAnErrorWithItsOutput) {
  sandbox box;
  const fs::path rows = box.dir / "rows.jsonl";
  std::ofstream(rows) << "{\"tag\": \"only\"}\n";
  try {
    write_report(rows.string(), false);
    ADD_FAILURE() << "a row without its figures rendered";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("rows.jsonl:1: missing mode, idle_cores"),
              std::string::npos)
        << e.what();
  }
  ::setenv("KNIT_BENCH_REPORT", (box.dir / "no-such-report.py").c_str(), 1);
  EXPECT_THROW(write_report(rows.string(), false), std::runtime_error);
  ::unsetenv("KNIT_BENCH_REPORT");
  EXPECT_FALSE(fs::exists(box.dir / "report.md"));
}

TEST(end_to_end, MissingBinariesAreAClearError) {
  sandbox box;
  run_options cfg = box.config();
  cfg.server_exe = (box.dir / "bin/nope").string();
  EXPECT_EQ(run_benchmark(cfg), 2);
}

}  // namespace
}  // namespace knit::bench

// The pipelined case (wrk, 16 pipelined GET /plaintext per round trip): the plan accepts it and
// loads /plaintext alone, wrk's command line, the figures its script prints read into a
// load_result, and that into the row the report shows (responses/s, CPU and system calls per
// response), which reads back.
#include <gtest/gtest.h>

#include <string>

#include "driver/run/case_row.hpp"
#include "driver/run/plan.hpp"
#include "driver/run/rows.hpp"
#include "driver/run/wrk_run.hpp"

namespace knit::bench {
namespace {

// What the script's done() prints after wrk's own summary (wrk 4.1, -t1 -c50 -d8s).
constexpr const char* kWrkOutput =
    "Running 8s test @ http://127.0.0.1:3000/plaintext\n"
    "  1 threads and 50 connections\n"
    "  Thread Stats   Avg      Stdev     Max   +/- Stdev\n"
    "    Latency     3.10ms  412.00us   9.80ms   91.00%\n"
    "  4000000 requests in 8.00s, 480.00MB read\n"
    "Requests/sec: 500000.00\n"
    "knit-bench-wrk {\"duration_us\":8000000,\"requests\":4000000,\"bytes\":503316480,"
    "\"errors\":{\"connect\":0,\"read\":0,\"write\":0,\"status\":40000,\"timeout\":2},"
    "\"latency_us\":{\"max\":9800}}\n";

TEST(pipelined_plan, LoadsPlaintextAloneAndTakesNoRate) {
  auto cases = parse_plan(R"([{"tag":"inline","mode":"pipelined","server_mode":"inline"},
      {"tag":"inline","mode":"sat","server_mode":"inline"}])");
  ASSERT_EQ(cases.size(), 2u);  // the same tag in two modes: two rows apart
  EXPECT_EQ(case_routes(cases[0]), std::vector<std::string>{"plaintext"});
  EXPECT_EQ(case_routes(cases[1]), (std::vector<std::string>{"ping", "ssr", "jwt"}));
  EXPECT_THROW(parse_plan(R"([{"tag":"x","mode":"pipelined","rate_per_route":100}])"), plan_error);
  EXPECT_THROW(parse_plan(R"([{"tag":"x","mode":"piped"}])"), plan_error);
}

TEST(wrk_run, CommandLineEndsWithTheDepth) {
  wrk_spec s;
  s.exe = "/usr/bin/wrk";
  s.port = 4000;
  s.duration_s = 7.5;  // wrk takes whole seconds: rounded up
  s.threads = 2;
  s.conns = 1;  // wrk wants a connection per thread at least
  s.script_path = "/tmp/b/wrk_pipeline.lua";
  EXPECT_EQ(wrk_argv(s), (std::vector<std::string>{"/usr/bin/wrk", "-t", "2", "-c", "2", "-d", "8s",
                                                   "-s", "/tmp/b/wrk_pipeline.lua",
                                                   "http://127.0.0.1:4000/plaintext", "--", "16"}));
}

TEST(wrk_run, ParsesTheScriptsFigures) {
  const load_result r = parse_wrk_output(kWrkOutput);
  EXPECT_DOUBLE_EQ(r.duration_s, 8.0);
  ASSERT_EQ(r.routes.size(), 1u);
  const load_route_result& p = r.routes.at("plaintext");
  EXPECT_DOUBLE_EQ(p.rps, 500000.0);  // every response counts
  EXPECT_DOUBLE_EQ(p.requests, 4000000.0);
  EXPECT_DOUBLE_EQ(p.successes, 3960000.0);  // the status errors are not successes
  EXPECT_DOUBLE_EQ(p.success_rate, 0.99);
  EXPECT_DOUBLE_EQ(p.errors, 40002.0);
  EXPECT_DOUBLE_EQ(p.max, 0.0098);  // the slowest batch
  EXPECT_EQ(p.p99, 0.0);            // not measured: wrk's percentiles are wrong when pipelining
}

TEST(wrk_run, RefusesOutputWithoutFigures) {
  EXPECT_THROW(parse_wrk_output("Running 8s test @ http://127.0.0.1:3000/plaintext\n"),
               std::runtime_error);
  EXPECT_THROW(parse_wrk_output("knit-bench-wrk {\"requests\":1}\n"), std::runtime_error);
  EXPECT_THROW(parse_wrk_output("knit-bench-wrk {\"duration_us\":0,\"requests\":1,\"errors\":{"
                                "\"connect\":0,\"read\":0,\"write\":0,\"status\":0,\"timeout\":0},"
                                "\"latency_us\":{\"max\":1}}\n"),
               std::runtime_error);
}

TEST(wrk_run, FiguresBecomeTheRowTheReportShows) {
  plan_case c;
  c.tag = "nginx";
  c.mode = "pipelined";
  c.server_mode = "peer:nginx";
  c.peer_command = "exec nginx";
  c.peer_routes = {"ping"};
  run_options cfg;
  cfg.idle_s = 1;
  cfg.window_s = 8;
  case_measurement m;
  m.window_s = 8;
  m.window.ticks_s = 7.6;
  m.window.sched_s = 7.6;  // 0.95 cores
  m.window.wall_s = 8;
  m.idle.wall_s = 1;
  m.load = parse_wrk_output(kWrkOutput);
  m.syscalls = 2000000;  // over 4,000,000 responses
  const result_row r = build_row(c, 0, m, cfg);
  EXPECT_EQ(r.mode, "pipelined");
  EXPECT_EQ(r.total_rps, 495000);                        // the successes: 500000 x 0.99
  EXPECT_DOUBLE_EQ(*r.routes.at("plaintext").max, 9.8);  // ms, the slowest batch of 16
  EXPECT_DOUBLE_EQ(r.cores, 0.95);
  EXPECT_EQ(r.cpu_us_per_req, 2);                                   // 0.95e6 / 495000 = 1.92
  EXPECT_DOUBLE_EQ(r.cpu.at("syscalls_per_req").as_double(), 0.5);  // every response counts
  // rows.jsonl reads back a pipelined row (the report re-renders from it).
  const result_row back = row_from_json_line(row_to_json_line(r));
  EXPECT_EQ(back.mode, "pipelined");
  EXPECT_DOUBLE_EQ(back.routes.at("plaintext").rps, r.routes.at("plaintext").rps);
}

}  // namespace
}  // namespace knit::bench

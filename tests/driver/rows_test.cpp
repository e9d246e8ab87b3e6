// Rows: JSON line round trips (ours and the reference benchmark's), Python-compatible rounding,
// and the row a measurement turns into.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "driver/run/numfmt.hpp"
#include "driver/run/rows.hpp"
#include "driver/run/runner.hpp"
#include "driver/run/server_stats.hpp"

namespace knit::bench {
namespace {

result_row sample_row() {
  result_row r;
  r.tag = "t4old";
  r.mode = "rate";
  r.threads = 4;
  r.spin = "200";
  r.park = "1";
  r.doorbell = true;
  r.steal = std::nullopt;
  r.server_mode = "pooled";
  r.cost_profile = "native";
  r.extra_cost_us = 50;
  r.env = {{"KNIT_MAX_SPINNERS", "2"}};
  r.rep = 2;
  r.idle_cores = 0.682;
  r.total_rps = 5999;
  r.cores = 2.49;
  r.rps_per_core = 2411;
  r.cpu_us_per_req = 415;
  r.os_threads = 26;
  r.gen_cores = 0.53;
  route_row_stats ping;
  ping.rps = 1999.65;
  ping.p50 = 0.46;
  ping.p99 = 2.95;
  ping.ok = 1.0;
  ping.p90 = 1.5;
  ping.p999 = 7.25;
  ping.max = 12.0;
  ping.rate_target = 2000;
  ping.rate_met = true;
  r.routes["ping"] = ping;
  route_row_stats ssr = ping;
  ssr.rate_met = false;
  r.routes["ssr"] = ssr;
  r.routes["jwt"] = ping;
  r.idle_s = 2;
  r.warmup_s = 3;
  r.window_s = 8;
  r.conns = 50;
  r.rate_per_route = 2000;
  r.pool_counters = {{"calls_submitted", 1000}, {"host_wakes", 250}};
  r.pool_per_call = {{"host_wakes", 0.25}};
  r.server_requests = {{"ping", 100}};
  r.cpu_layout = boost::json::object{{"server_cpus", "0"}, {"gen_cpus", "1"}};
  r.cpu = boost::json::object{{"source", "schedstat"}, {"window_sched_s", 19.9}};
  r.server_env = {{"KNIT_MODE", "pooled"}, {"PORT", "3000"}};
  r.load_cmd = {"/x/knit-load", "--port", "3000"};
  r.server_pid = 4242;
  return r;
}

TEST(rows, OurRowRoundTrips) {
  result_row r = sample_row();
  std::string line = row_to_json_line(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  result_row back = row_from_json_line(line);
  EXPECT_EQ(back, r);
  EXPECT_EQ(row_to_json_line(back), line);
}

TEST(rows, StuckCallCountersTravelInPoolCounters) {
  // Two knit-stats lines around a window in which one call got stuck: the counters are
  // deltas, retired_running (a gauge) is the level at the end, and none is made per call.
  auto before = parse_stats_line(
      R"(knit-stats {"mode":"pooled","requests":{"ssr":10},"pool":{"threads":1,"totals":)"
      R"({"calls_submitted":10,"calls_stuck":2,"workers_replaced":2,"retired_running":1}}})");
  auto after = parse_stats_line(
      R"(knit-stats {"mode":"pooled","requests":{"ssr":20},"pool":{"threads":1,"totals":)"
      R"({"calls_submitted":20,"calls_stuck":3,"workers_replaced":3,"retired_running":2}}})");
  ASSERT_TRUE(before && after);
  result_row r = sample_row();
  r.pool_counters = diff_counters(before->pool_totals, after->pool_totals);
  r.pool_per_call = per_call(r.pool_counters);
  EXPECT_DOUBLE_EQ(r.pool_counters.at("calls_stuck"), 1);
  EXPECT_DOUBLE_EQ(r.pool_counters.at("workers_replaced"), 1);
  EXPECT_DOUBLE_EQ(r.pool_counters.at("retired_running"), 2);
  EXPECT_DOUBLE_EQ(r.pool_per_call.at("calls_stuck"), 0.1);
  EXPECT_EQ(r.pool_per_call.count("retired_running"), 0u);

  const std::string line = row_to_json_line(r);
  EXPECT_NE(line.find("\"calls_stuck\": 1"), std::string::npos) << line;
  EXPECT_NE(line.find("\"workers_replaced\": 1"), std::string::npos) << line;
  EXPECT_EQ(row_from_json_line(line), r);
}

TEST(rows, ReferenceKeysComeFirstInTheirOrder) {
  std::string line = row_to_json_line(sample_row());
  EXPECT_EQ(line.rfind(
                "{\"tag\": \"t4old\", \"mode\": \"rate\", \"threads\": 4, \"spin\": \"200\", "
                "\"park\": \"1\", "
                "\"doorbell\": true, \"idle_cores\": 0.682, \"total_rps\": 5999, \"cores\": 2.49, ",
                0),
            0u)
      << line;
  // Plain decimals, not Boost's 2.8151E3 style, and whole doubles keep their ".0".
  EXPECT_NE(line.find("\"rps\": 1999.65"), std::string::npos);
  EXPECT_NE(line.find("\"ok\": 1.0"), std::string::npos);
}

TEST(rows, EveryReferenceRowRoundTrips) {
  std::ifstream in(std::string(KNIT_DRIVER_FIXTURES) + "/reference_benchmark_rows.jsonl");
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    result_row r = row_from_json_line(line);
    result_row again = row_from_json_line(row_to_json_line(r));
    EXPECT_EQ(again, r) << line;
    ++n;
  }
  EXPECT_EQ(n, 29);
}

TEST(rows, ReferenceRowIsNormalised) {
  result_row only = row_from_json_line(
      R"({"tag": "only", "mode": "sat", "threads": 1, "spin": "default", "park": "default",)"
      R"( "doorbell": true, "idle_cores": 0.002, "total_rps": 8208, "cores": 1.19,)"
      R"( "rps_per_core": 6909, "cpu_us_per_req": 145, "os_threads": 20, "gen_cores": 0.22,)"
      R"( "routes": {"ping": {"rps": 2815.1, "p50": 35.42, "p99": 42.99, "ok": 1.0}}})");
  EXPECT_EQ(only.server_mode, "inline");
  EXPECT_TRUE(is_reference_schema(only));
  EXPECT_EQ(only.doorbell, std::optional<bool>(true));
  EXPECT_FALSE(only.routes.at("ping").p90.has_value());
  result_row t1 = row_from_json_line(
      R"({"tag": "t1", "mode": "sat", "threads": 1, "spin": "default", "park": "default",)"
      R"( "doorbell": true, "idle_cores": 0.058, "total_rps": 18014, "cores": 1.79,)"
      R"( "rps_per_core": 10041, "cpu_us_per_req": 100, "os_threads": 23, "gen_cores": 0.52,)"
      R"( "routes": {}})");
  EXPECT_EQ(t1.server_mode, "pooled");
}

// An external peer's row: no knit-stats, so its pool statistics are written as null and
// read back empty.
TEST(rows, PeerRowsKeepNullPoolStats) {
  auto rows = read_rows_file(std::string(KNIT_DRIVER_FIXTURES) + "/peers_bun.jsonl");
  const result_row& nginx = rows.at(7);
  ASSERT_EQ(nginx.server_mode, "peer:nginx");
  EXPECT_TRUE(nginx.pool_counters.empty());
  EXPECT_EQ(nginx.peer_processes, std::optional<int>(2));
  auto o = row_to_json(nginx);
  EXPECT_TRUE(o.at("pool_counters").is_null());
  EXPECT_TRUE(o.at("pool_per_call").is_null());
  EXPECT_TRUE(o.at("server_requests").is_null());
  EXPECT_EQ(row_from_json(o), nginx);
}

TEST(rows, BadRowsNameTheProblem) {
  EXPECT_THROW(row_from_json_line("[1,2]"), std::runtime_error);
  try {
    row_from_json_line(
        R"({"tag": "x", "mode": "sat", "idle_cores": 0, "total_rps": 1, "routes": {}})");
    FAIL() << "missing cores accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cores"), std::string::npos) << e.what();
  }
  const std::string path = ::testing::TempDir() + "bad_rows.jsonl";
  {
    std::ofstream f(path);
    f << row_to_json_line(sample_row()) << "\n\nnot json\n";
  }
  try {
    read_rows_file(path);
    FAIL() << "bad line accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(":3:"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

TEST(rounding, MatchesPython) {
  // Python: round(2.675, 2) == 2.67 (binary value below the tie), round(0.125, 2) == 0.12 (exact
  // tie, to even).
  EXPECT_DOUBLE_EQ(py_round(2.675, 2), 2.67);
  EXPECT_DOUBLE_EQ(py_round(0.125, 2), 0.12);
  EXPECT_DOUBLE_EQ(py_round(0.0585, 3),
                   0.059);  // Python agrees: 0.0585 is stored as 0.058500000000000003
  EXPECT_EQ(py_round_int(2.5), 2);
  EXPECT_EQ(py_round_int(3.5), 4);
  EXPECT_EQ(py_round_int(8207.92), 8208);
  EXPECT_EQ(fixed(2.0, 2), "2.00");
  EXPECT_EQ(fixed(-0.001, 2), "0.00");
  EXPECT_EQ(seconds_text(5), "5");
  EXPECT_EQ(seconds_text(0.3), "0.3");
}

TEST(build_row, RoundsLikeDrivePy) {
  plan_case c;
  c.tag = "t2";
  c.mode = "sat";
  c.threads = 2;
  c.cost_profile = "bun";
  run_options cfg;
  cfg.idle_s = 5;
  cfg.window_s = 15;
  cfg.server_cpus = {0, 1};
  case_measurement m;
  m.window_s = 15;
  m.idle.ticks_s = 0.17;
  m.idle.sched_s = 0.1701234;
  m.idle.wall_s = 5.0;
  m.window.ticks_s = 28.8;
  m.window.sched_s = 28.81;
  m.window.wall_s = 15.02;
  m.load.gen_cpu_s = 6.6;
  m.load.duration_s = 15;
  load_route_result ping;
  ping.rps = 5785.2712;
  ping.p50 = 0.016041;
  ping.p99 = 0.0273149;
  ping.success_rate = 1.0;
  load_route_result ssr = ping, jwt = ping;
  ssr.rps = 4996.7349;
  jwt.rps = 5029.0625;
  m.load.routes = {{"ping", ping}, {"ssr", ssr}, {"jwt", jwt}};
  m.os_threads = 23;
  m.conns = 100;
  result_row r = build_row(c, 1, m, cfg);
  EXPECT_DOUBLE_EQ(r.idle_cores, 0.034);  // schedstat preferred: 0.1701234 / 5 = 0.03402
  EXPECT_DOUBLE_EQ(r.cores, 1.92);        // 28.81 / 15 = 1.9207
  EXPECT_EQ(r.total_rps, 15811);          // 15811.0686
  EXPECT_EQ(r.rps_per_core, 8232);        // unrounded: 15811.0686 / 1.92067
  EXPECT_EQ(r.cpu_us_per_req, 121);
  EXPECT_DOUBLE_EQ(r.gen_cores, 0.44);  // 6.6 / 15
  EXPECT_DOUBLE_EQ(r.routes.at("ping").rps, 5785.27);
  EXPECT_DOUBLE_EQ(r.routes.at("ping").p50, 16.04);
  EXPECT_DOUBLE_EQ(r.routes.at("ping").p99, 27.31);
  EXPECT_EQ(r.rep, 1);
  EXPECT_EQ(r.server_mode, "pooled");
  EXPECT_FALSE(r.routes.at("ping").rate_met.has_value());  // sat mode
  EXPECT_EQ(r.cpu_layout.at("server_cpus").as_string(), "0-1");
  EXPECT_EQ(r.cpu.at("source").as_string(), "schedstat");
}

}  // namespace
}  // namespace knit::bench

// The hosts field (KNIT_HOSTS) through plans, rows and labels, the default CPU split, and
// the embedded hosts sweep plans: their grid and their time on the machine each is sized for.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "driver/run/builtin_plans.hpp"
#include "driver/run/cpu_list.hpp"
#include "driver/run/plan.hpp"
#include "driver/run/rows.hpp"

namespace knit::bench {
namespace {

TEST(hosts_plan, the_field_parses_defaults_to_one_and_round_trips) {
  auto cases = parse_plan(R"([
    {"tag":"i4","mode":"sat","server_mode":"inline","hosts":4},
    {"tag":"t2","mode":"sat","server_mode":"pooled","threads":2,"hosts":4},
    {"tag":"a2","mode":"sat","server_mode":"asio","threads":2,"hosts":8},
    {"tag":"auto1","mode":"sat","server_mode":"auto","threads":1,"hosts":2},
    {"tag":"one","mode":"sat","server_mode":"pooled","threads":1}
  ])");
  ASSERT_EQ(cases.size(), 5u);
  EXPECT_EQ(cases[0].hosts, 4);
  EXPECT_EQ(cases[2].hosts, 8);
  EXPECT_EQ(cases[4].hosts, 1);
  EXPECT_EQ(parse_plan(boost::json::serialize(plan_to_json(cases))), cases);
  // One host is the server's default: written neither to the plan nor to the environment.
  EXPECT_FALSE(case_to_json(cases[4]).as_object().contains("hosts"));
  EXPECT_EQ(server_env(cases[4], "127.0.0.1", 3000).count("KNIT_HOSTS"), 0u);
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(server_env(cases[i], "127.0.0.1", 3000).at("KNIT_HOSTS"),
              std::to_string(cases[i].hosts))
        << cases[i].tag;
}

TEST(hosts_plan, bad_hosts_are_refused_with_the_case) {
  for (const char* bad : {R"([{"tag":"x","server_mode":"inline","hosts":0}])",
                          R"([{"tag":"x","server_mode":"inline","hosts":"4"}])",
                          R"([{"tag":"x","server_mode":"inline","hosts":1.5}])",
                          R"([{"tag":"x","server_mode":"inline","env":{"KNIT_HOSTS":"4"}}])",
                          R"([{"tag":"x","server_mode":"peer:x","command":"c","hosts":2}])"}) {
    try {
      parse_plan(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const plan_error& e) {
      EXPECT_NE(std::string(e.what()).find("(tag \"x\")"), std::string::npos) << e.what();
    }
  }
}

result_row row_with(const std::string& server_mode, int threads, int hosts) {
  result_row r;
  r.tag = "x";
  r.mode = "sat";
  r.server_mode = server_mode;
  r.threads = threads;
  r.hosts = hosts;
  r.routes["ping"] = {};
  return r;
}

TEST(hosts_rows, the_field_round_trips_and_old_rows_read_as_one_host) {
  result_row r = row_with("pooled", 2, 4);
  r.reported_hosts = 4;
  const std::string line = row_to_json_line(r);
  EXPECT_NE(line.find("\"hosts\": 4"), std::string::npos) << line;
  EXPECT_EQ(row_from_json_line(line), r);
  // A row written before KNIT_HOSTS: no hosts, no reported_hosts.
  result_row old = row_from_json_line(
      R"({"tag":"t1","mode":"sat","threads":1,"idle_cores":0,"total_rps":1,"cores":1,)"
      R"("routes":{"ping":{"rps":1,"p50":1,"p99":1}},"server_mode":"pooled"})");
  EXPECT_EQ(old.hosts, 1);
  EXPECT_FALSE(old.reported_hosts);
  EXPECT_TRUE(old.unknown.empty());
  EXPECT_THROW(row_from_json_line(R"({"tag":"t","mode":"sat","idle_cores":0,"total_rps":1,)"
                                  R"("cores":1,"routes":{},"hosts":0})"),
               std::runtime_error);
}

TEST(cpu_split, the_generator_gets_its_share_and_never_the_servers_cpus) {
  cpu_split quarter = split_cpus(16, 0.25);
  EXPECT_EQ(format_cpu_list(quarter.server), "0-11");
  EXPECT_EQ(format_cpu_list(quarter.gen), "12-15");
  cpu_split half = split_cpus(16, 0.5);
  EXPECT_EQ(format_cpu_list(half.server), "0-7");
  EXPECT_EQ(format_cpu_list(half.gen), "8-15");
  cpu_split two = split_cpus(2, 0.25);  // as before: server 0, generator 1
  EXPECT_EQ(format_cpu_list(two.server), "0");
  EXPECT_EQ(format_cpu_list(two.gen), "1");
  EXPECT_TRUE(split_cpus(1, 0.5).gen.empty());
  EXPECT_FALSE(cpu_sets_overlap(half.server, half.gen));
  EXPECT_TRUE(cpu_sets_overlap({0, 1}, {1}));
  EXPECT_TRUE(cpu_sets_overlap({}, {1}));  // unpinned runs anywhere
}

// (server_mode, hosts, threads) of every case at the server's default KNIT_HEAVY_SHARE; the
// cases that set it are a point measured again with another share, counted apart.
std::set<std::tuple<std::string, int, int>> grid_of(const builtin_plan& p) {
  std::set<std::tuple<std::string, int, int>> g;
  std::size_t share_cases = 0;
  for (const auto& c : p.cases) {
    EXPECT_EQ(c.mode, "sat") << c.tag;
    EXPECT_EQ(c.cost_profile, "bun") << c.tag;
    if (c.env.contains("KNIT_HEAVY_SHARE")) {
      ++share_cases;
      continue;
    }
    g.insert({c.server_mode, c.hosts, c.threads});
  }
  EXPECT_EQ(g.size() + share_cases, p.cases.size()) << p.name << ": a point measured twice";
  return g;
}

// The (hosts, threads, share) of the cases that set KNIT_HEAVY_SHARE.
std::set<std::tuple<int, int, std::string>> share_cases_of(const builtin_plan& p) {
  std::set<std::tuple<int, int, std::string>> s;
  for (const auto& c : p.cases) {
    if (auto it = c.env.find("KNIT_HEAVY_SHARE"); it != c.env.end()) {
      EXPECT_EQ(c.server_mode, "pooled") << c.tag;
      s.insert({c.hosts, c.threads, it->second});
    }
  }
  return s;
}

std::set<std::tuple<std::string, int, int>> expected_grid(const std::vector<int>& hs,
                                                          const std::vector<int>& ws) {
  std::set<std::tuple<std::string, int, int>> g;
  for (int h : hs) {
    g.insert({"inline", h, 0});
    for (int w : ws) {
      g.insert({"pooled", h, w});
      g.insert({"asio", h, w});
    }
  }
  return g;
}

double plan_seconds(const builtin_plan& p) {
  return estimate_s(static_cast<int>(p.cases.size()) * p.repeat, p.idle_s, p.warmup_s, p.window_s);
}

TEST(hosts_sweep_plans, the_sweep_has_its_grid_and_fits_in_nine_minutes) {
  builtin_plan p = load_builtin_plan("hosts-sweep");
  EXPECT_EQ(grid_of(p), expected_grid({1, 2, 4, 8}, {1, 2, 4, 8}));
  EXPECT_EQ(share_cases_of(p),
            (std::set<std::tuple<int, int, std::string>>{
                {1, 1, "0"}, {2, 2, "0"}, {4, 4, "0"}, {8, 8, "0"}, {8, 8, "10"}}));
  EXPECT_EQ(p.cases.size(), 41u);
  // 41 cases x 1 x (1 + 2 + 8 + 1.5 s) = 512.5 s, as its "about" says.
  EXPECT_DOUBLE_EQ(plan_seconds(p), 512.5);
  EXPECT_LE(plan_seconds(p), 9 * 60);
  EXPECT_TRUE(p.separate_cpus);
  EXPECT_DOUBLE_EQ(p.gen_cpu_share, 0.5);
}

TEST(hosts_sweep_plans, the_small_grid_fits_in_three_minutes) {
  builtin_plan p = load_builtin_plan("hosts-sweep-small");
  EXPECT_EQ(grid_of(p), expected_grid({1, 2}, {1}));
  // 6 cases x 2 x (1 + 2 + 6 + 1.5 s) = 126 s.
  EXPECT_DOUBLE_EQ(plan_seconds(p), 126);
  EXPECT_LE(plan_seconds(p), 3 * 60);
  EXPECT_GE(p.repeat, 2);  // paired ratios need more than one repetition to show a spread
  EXPECT_TRUE(p.separate_cpus);
}

TEST(hosts_sweep_plans, layout_fields_are_checked) {
  const std::string head = R"({"idle_s":1,"warmup_s":1,"window_s":1,"repeat":1,"conns":1,)"
                           R"("profiles":["bun"],"cases":[{"tag":"i","server_mode":"inline"}],)";
  EXPECT_THROW(parse_builtin_plan("x", head + R"("gen_cpu_share":1})"), plan_error);
  EXPECT_THROW(parse_builtin_plan("x", head + R"("separate_cpus":"yes"})"), plan_error);
  builtin_plan p = parse_builtin_plan("x", head + R"("gen_cpu_share":0.5,"separate_cpus":true})");
  EXPECT_DOUBLE_EQ(p.gen_cpu_share, 0.5);
  EXPECT_TRUE(p.separate_cpus);
  // Plans without them keep the old layout: a quarter, CPUs may be shared if asked.
  builtin_plan d = load_builtin_plan("default");
  EXPECT_DOUBLE_EQ(d.gen_cpu_share, 0.25);
  EXPECT_FALSE(d.separate_cpus);
}

}  // namespace
}  // namespace knit::bench

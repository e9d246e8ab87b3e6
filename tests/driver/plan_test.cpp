// Plans: parsing, clear errors for bad plans, the built-ins, and the server environment.
#include <gtest/gtest.h>

#include <string>

#include "driver/json_write.hpp"
#include "driver/plan.hpp"

namespace knit::bench {
namespace {

// Expects parse_plan to throw a PlanError whose message contains every fragment.
void expect_plan_error(const std::string& json, std::initializer_list<const char*> fragments) {
  try {
    parse_plan(json);
    FAIL() << "accepted: " << json;
  } catch (const PlanError& e) {
    for (const char* f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
  }
}

TEST(Plan, ParsesTheBriefsExample) {
  auto cases = parse_plan(R"([
    {"tag":"inline","mode":"sat","server_mode":"inline","cost_profile":"bun"},
    {"tag":"t4s0","mode":"sat","server_mode":"pooled","threads":4,"spin":"0","park":"","doorbell":"1","steal":"",
     "env":{"KNIT_MAX_SPINNERS":"1"},"cost_profile":"bun"},
    {"tag":"t4s0","mode":"rate","server_mode":"pooled","threads":4,"spin":0,"park":"1","cost_profile":"bun"},
    {"tag":"c","mode":"sat","server_mode":"pooled","threads":1,"cost_profile":"native","extra_cost_us":50}
  ])");
  ASSERT_EQ(cases.size(), 4u);
  EXPECT_EQ(cases[1].threads, 4);
  EXPECT_EQ(cases[1].spin, "0");
  EXPECT_EQ(cases[1].doorbell, "1");
  EXPECT_EQ(cases[1].env.at("KNIT_MAX_SPINNERS"), "1");
  EXPECT_EQ(cases[2].spin, "0");  // numbers are accepted for settings
  EXPECT_EQ(cases[2].park, "1");
  EXPECT_EQ(cases[3].extra_cost_us, std::optional<int>(50));
}

TEST(Plan, BadPlansSayWhatAndWhere) {
  expect_plan_error("{", {"not valid JSON"});
  expect_plan_error(R"({"tag":"x"})", {"JSON array"});
  expect_plan_error("[]", {"no cases"});
  expect_plan_error(R"([{"mode":"sat"}])", {"plan case 1", "\"tag\""});
  expect_plan_error(R"([{"tag":"a","mode":"saturate"}])", {"plan case 1", "tag \"a\"", "\"mode\"", "saturate"});
  expect_plan_error(R"([{"tag":"a","thread":4}])", {"unknown field \"thread\""});
  expect_plan_error(R"([{"tag":"a","threads":-1}])", {"\"threads\"", "between"});
  expect_plan_error(R"([{"tag":"a","threads":"4"}])", {"\"threads\"", "integer"});
  expect_plan_error(R"([{"tag":"a","spin":"fast"}])", {"\"spin\"", "fast"});
  expect_plan_error(R"([{"tag":"a","doorbell":"yes"}])", {"\"doorbell\""});
  expect_plan_error(R"([{"tag":"a","cost_profile":"node"}])", {"\"cost_profile\"", "node"});
  expect_plan_error(R"([{"tag":"a","env":{"KNIT_SPIN":"5"}}])", {"KNIT_SPIN", "use the field"});
  expect_plan_error(R"([{"tag":"a","env":{"1BAD":"5"}}])", {"not a valid variable name"});
  expect_plan_error(R"([{"tag":"a","server_mode":"inline","spin":"0"}])", {"inline"});
  expect_plan_error(R"([{"tag":"a"},{"tag":"a"}])", {"plan case 2", "duplicate"});
  // A rate case needs a rate, or an inline sat case earlier in the plan to derive it from.
  expect_plan_error(R"([{"tag":"a","mode":"rate","threads":1}])", {"rate_per_route", "inline"});
  expect_plan_error(R"([{"tag":"i","server_mode":"inline","cost_profile":"bun"},
                        {"tag":"a","mode":"rate","threads":1,"cost_profile":"native"}])",
                    {"plan case 2"});
  EXPECT_NO_THROW(parse_plan(R"([{"tag":"a","mode":"rate","threads":1,"rate_per_route":2000}])"));
  expect_plan_error(R"([{"tag":"a","mode":"sat","rate_per_route":2000}])", {"only applies"});
}

TEST(Plan, LoadFileNamesTheFile) {
  try {
    load_plan_file("/nonexistent/plan.json");
    FAIL();
  } catch (const PlanError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/plan.json"), std::string::npos);
  }
}

TEST(Plan, BuiltinsSurviveTheirOwnJson) {
  for (const BuiltinPlan& p : {default_plan(), full_plan(), cost_sweep_plan()}) {
    auto text = to_json_pretty(plan_to_json(p.cases));
    auto back = parse_plan(text);
    EXPECT_EQ(back, p.cases) << p.name;
  }
}

TEST(Plan, DefaultPlanShape) {
  BuiltinPlan p = default_plan();
  // Two profiles x (inline, t1, t2, t4, t2old, t4old) x (sat, rate).
  EXPECT_EQ(p.cases.size(), 24u);
  EXPECT_EQ(p.cases.front().server_mode, "inline");
  EXPECT_EQ(p.cases.front().mode, "sat");
  int old = 0;
  for (const auto& c : p.cases)
    if (c.tag == "t4old") {
      EXPECT_EQ(c.spin, "200");
      EXPECT_EQ(c.park, "1");
      ++old;
    }
  EXPECT_EQ(old, 4);
  // About six minutes on two cores, with ~1 s per case for start and stop.
  double minutes = p.cases.size() * (p.idle_s + p.warmup_s + p.window_s + 1) / 60;
  EXPECT_LE(minutes, 6.5);
}

TEST(Plan, FullAndSweepShapes) {
  BuiltinPlan f = full_plan();
  EXPECT_EQ(f.cases.size(), 2u * (1 + 5 * 3));
  EXPECT_EQ(f.repeat, 3);
  EXPECT_EQ(f.window_s, 15);
  EXPECT_EQ(f.warmup_s, 6);
  BuiltinPlan s = cost_sweep_plan();
  EXPECT_EQ(s.cases.size(), 8u * 2 * 3);
  for (const auto& c : s.cases) {
    EXPECT_TRUE(c.extra_cost_us.has_value());
    EXPECT_EQ(c.cost_profile, "native");
  }
}

TEST(Plan, ServerEnvironment) {
  Case c;
  c.tag = "x";
  c.threads = 4;
  c.spin = "200";
  c.park = "1";
  c.doorbell = "0";
  c.cost_profile = "native";
  c.extra_cost_us = 20;
  c.env = {{"KNIT_MAX_SPINNERS", "2"}};
  auto env = server_env(c, "127.0.0.1", 3111);
  EXPECT_EQ(env.at("PORT"), "3111");
  EXPECT_EQ(env.at("HOST"), "127.0.0.1");
  EXPECT_EQ(env.at("KNIT_MODE"), "pooled");
  EXPECT_EQ(env.at("KNIT_THREADS"), "4");
  EXPECT_EQ(env.at("KNIT_SPIN"), "200");
  EXPECT_EQ(env.at("KNIT_PARK"), "1");
  EXPECT_EQ(env.at("KNIT_DOORBELL"), "0");
  EXPECT_EQ(env.at("KNIT_SSR_COST_US"), "20");
  EXPECT_EQ(env.at("KNIT_JWT_COST_US"), "20");
  EXPECT_EQ(env.at("KNIT_MAX_SPINNERS"), "2");
  EXPECT_EQ(env.count("KNIT_STEAL"), 0u);  // "" = unset, not empty
  EXPECT_EQ(env.at("JWT_SECRET"), "x");      // the seed's fixed secret
  Case i;
  i.server_mode = "inline";
  auto ienv = server_env(i, "127.0.0.1", 3000);
  EXPECT_EQ(ienv.count("KNIT_THREADS"), 0u);
  EXPECT_EQ(ienv.count("KNIT_SPIN"), 0u);
}

}  // namespace
}  // namespace knit::bench

// Plans: parsing, clear errors for bad plans, the built-ins, and the server environment.
#include <gtest/gtest.h>

#include <string>

#include "driver/run/builtin_plans.hpp"
#include "driver/run/json_write.hpp"
#include "driver/run/plan.hpp"

namespace knit::bench {
namespace {

// Expects parse_plan to throw a plan_error whose message contains every fragment.
void expect_plan_error(const std::string& json, std::initializer_list<const char*> fragments) {
  try {
    parse_plan(json);
    FAIL() << "accepted: " << json;
  } catch (const plan_error& e) {
    for (const char* f : fragments)
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
  }
}

TEST(plan, ParsesTheBriefsExample) {
  auto cases = parse_plan(R"([
    {"tag":"inline","mode":"sat","server_mode":"inline","cost_profile":"bun"},
    {"tag":"t4s0","mode":"sat","server_mode":"pooled","threads":4,"spin":"0","park":"",
     "doorbell":"1","steal":"",
     "env":{"KNIT_MAX_SPINNERS":"1"},"cost_profile":"bun"},
    {"tag":"t4s0","mode":"rate","server_mode":"pooled","threads":4,"spin":0,"park":"1",
     "cost_profile":"bun"},
    {"tag":"c","mode":"sat","server_mode":"pooled","threads":1,"cost_profile":"native",
     "extra_cost_us":50}
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

TEST(plan, BadPlansSayWhatAndWhere) {
  expect_plan_error("{", {"not valid JSON"});
  expect_plan_error(R"({"tag":"x"})", {"JSON array"});
  expect_plan_error("[]", {"no cases"});
  expect_plan_error(R"([{"mode":"sat"}])", {"plan case 1", "\"tag\""});
  expect_plan_error(R"([{"tag":"a","mode":"saturate"}])",
                    {"plan case 1", "tag \"a\"", "\"mode\"", "saturate"});
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

TEST(plan, LoadFileNamesTheFile) {
  try {
    load_plan_file("/nonexistent/plan.json");
    FAIL();
  } catch (const plan_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/plan.json"), std::string::npos);
  }
}

TEST(plan, BuiltinsSurviveTheirOwnJson) {
  for (const builtin_plan& p :
       {load_builtin_plan("default"), load_builtin_plan("full"), load_builtin_plan("cost-sweep")}) {
    auto text = to_json_pretty(plan_to_json(p.cases));
    auto back = parse_plan(text);
    EXPECT_EQ(back, p.cases) << p.name;
  }
}

TEST(plan, DefaultPlanShape) {
  builtin_plan p = load_builtin_plan("default");
  // bun x (inline, t1, t2, a1, a2, m2, auto1) x (sat, rate), three interleaved repetitions.
  ASSERT_EQ(p.cases.size(), 14u);
  EXPECT_EQ(p.repeat, 3);
  std::vector<std::string> tags;
  for (size_t i = 0; i < 7; ++i)
    tags.push_back(p.cases[i].tag + "/" + p.cases[i].server_mode + "/" +
                   std::to_string(p.cases[i].threads));
  EXPECT_EQ(tags,
            (std::vector<std::string>{"inline/inline/0", "t1/pooled/1", "t2/pooled/2", "a1/asio/1",
                                      "a2/asio/2", "m2/multi/2", "auto1/auto/1"}));
  for (const auto& c : p.cases) EXPECT_EQ(c.cost_profile, "bun");
  EXPECT_EQ(p.cases[7].mode, "rate");
  EXPECT_EQ(p.cases[7].server_mode, "inline");
  // The whole default run stays under about 12 minutes on two CPUs, by the same estimate it prints.
  const double s =
      estimate_s(static_cast<int>(p.cases.size()) * p.repeat, p.idle_s, p.warmup_s, p.window_s);
  EXPECT_LE(s, 12 * 60);
  EXPECT_DOUBLE_EQ(s, 42 * (1 + 2 + 8 + kSetupS));
  // With native too, twice the cases.
  EXPECT_EQ(load_builtin_plan("default", {"bun", "native"}).cases.size(), 28u);
}

TEST(plan, FullAndSweepShapes) {
  builtin_plan f = load_builtin_plan("full");
  // (inline + 5 sizes x (default policy, old default, flat 50us, asio)) x (sat, rate).
  EXPECT_EQ(f.cases.size(), 2u * (1 + 5 * 4));
  EXPECT_EQ(f.repeat, 3);
  EXPECT_EQ(f.window_s, 15);
  EXPECT_EQ(f.warmup_s, 6);
  int asio = 0;
  for (const auto& c : f.cases)
    if (c.server_mode == "asio") {
      EXPECT_EQ(c.tag, "a" + std::to_string(c.threads));
      ++asio;
    }
  EXPECT_EQ(asio, 10);
  builtin_plan s = load_builtin_plan("cost-sweep");
  // 8 costs x 2 modes x (inline, t1, a1, auto1).
  ASSERT_EQ(s.cases.size(), 8u * 2 * 4);
  std::vector<std::string> first;
  for (size_t i = 0; i < 4; ++i) first.push_back(s.cases[i].tag + "/" + s.cases[i].server_mode);
  EXPECT_EQ(first,
            (std::vector<std::string>{"inline/inline", "t1/pooled", "a1/asio", "auto1/auto"}));
  for (const auto& c : s.cases) {
    EXPECT_TRUE(c.extra_cost_us.has_value());
    EXPECT_EQ(c.cost_profile, "native");
  }
}

TEST(plan, NewModesParseAndRoundTrip) {
  auto cases = parse_plan(R"([
    {"tag":"inline","server_mode":"inline","cost_profile":"bun"},
    {"tag":"a2","server_mode":"asio","threads":2,"cost_profile":"bun"},
    {"tag":"m2","server_mode":"multi","threads":2,"cost_profile":"bun"},
    {"tag":"auto1","server_mode":"auto","threads":1,"spin":"0","cost_profile":"bun"},
    {"tag":"nginx","server_mode":"peer:nginx","command":"exec nginx -g 'daemon off;'",
     "routes":["ping"],
     "cost_profile":"bun"},
    {"tag":"nginx","mode":"rate","server_mode":"peer:nginx","command":"x","cost_profile":"bun"}
  ])");
  ASSERT_EQ(cases.size(), 6u);
  EXPECT_EQ(cases[1].server_mode, "asio");
  EXPECT_EQ(cases[2].server_mode, "multi");
  EXPECT_EQ(cases[3].server_mode, "auto");
  EXPECT_EQ(cases[3].spin, "0");  // auto runs knit's pool, so its timer settings apply
  EXPECT_TRUE(is_peer_case(cases[4]));
  EXPECT_EQ(cases[4].peer_command, "exec nginx -g 'daemon off;'");
  EXPECT_EQ(cases[4].peer_routes, (std::vector<std::string>{"ping"}));
  EXPECT_EQ(case_routes(cases[4]), (std::vector<std::string>{"ping"}));
  EXPECT_EQ(case_routes(cases[5]), (std::vector<std::string>{"ping", "ssr", "jwt"}));
  EXPECT_EQ(parse_plan(to_json_pretty(plan_to_json(cases))), cases);
  auto j = case_to_json(cases[4]).as_object();
  EXPECT_EQ(j.at("command").as_string(), "exec nginx -g 'daemon off;'");
  EXPECT_EQ(j.at("routes").as_array().size(), 1u);
  EXPECT_EQ(case_to_json(cases[1]).as_object().count("command"), 0u);

  expect_plan_error(R"([{"tag":"a","server_mode":"fibers"}])",
                    {"server_mode", "asio", "multi", "auto", "fibers"});
  expect_plan_error(R"([{"tag":"a","server_mode":"asio","spin":"0"}])", {"pool settings", "asio"});
  expect_plan_error(R"([{"tag":"a","server_mode":"multi","park":"1"}])",
                    {"pool settings", "multi"});
  expect_plan_error(R"([{"tag":"a","server_mode":"peer:"}])", {"peer name"});
  expect_plan_error(R"([{"tag":"a","server_mode":"peer:a b","command":"x"}])", {"peer name"});
  expect_plan_error(R"([{"tag":"a","server_mode":"peer:a"}])", {"needs a non-empty \"command\""});
  expect_plan_error(R"([{"tag":"a","server_mode":"peer:a","command":"x","threads":2}])",
                    {"KNIT_THREADS"});
  expect_plan_error(
      R"([{"tag":"a","server_mode":"peer:a","command":"x","routes":["ping","html"]}])",
      {"routes", "html"});
  expect_plan_error(
      R"([{"tag":"a","server_mode":"peer:a","command":"x","routes":["ping","ping"]}])", {"twice"});
  expect_plan_error(R"([{"tag":"a","server_mode":"peer:a","command":"x","routes":[]}])",
                    {"at least one"});
  expect_plan_error(R"([{"tag":"a","server_mode":"asio","command":"x"}])", {"peer:NAME"});
}

TEST(plan, ServerEnvironment) {
  plan_case c;
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
  EXPECT_EQ(env.at("JWT_SECRET"), "x");    // the reference benchmark's secret
  plan_case i;
  i.server_mode = "inline";
  auto ienv = server_env(i, "127.0.0.1", 3000);
  EXPECT_EQ(ienv.count("KNIT_THREADS"), 0u);
  EXPECT_EQ(ienv.count("KNIT_SPIN"), 0u);
  plan_case a = c;
  a.server_mode = "asio";
  a.spin = a.park = a.doorbell = "";
  EXPECT_EQ(server_env(a, "127.0.0.1", 3000).at("KNIT_MODE"), "asio");
  EXPECT_EQ(server_env(a, "127.0.0.1", 3000).at("KNIT_THREADS"), "4");
  // An external peer gets PORT, HOST, the secret and its env, and none of knit's variables.
  plan_case p;
  p.tag = "nginx";
  p.server_mode = "peer:nginx";
  p.cost_profile = "bun";
  p.extra_cost_us = 20;
  p.env = {{"WORKERS", "1"}};
  EXPECT_EQ(server_env(p, "127.0.0.1", 3005),
            (std::map<std::string, std::string>{
                {"HOST", "127.0.0.1"}, {"JWT_SECRET", "x"}, {"PORT", "3005"}, {"WORKERS", "1"}}));
}

}  // namespace
}  // namespace knit::bench

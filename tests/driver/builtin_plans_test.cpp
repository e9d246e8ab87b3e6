// The built-in plans as embedded from bench/plans/*.json: each parses, and each equals the
// plan the C++ builders made before the plans became JSON (kept here as the reference).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "driver/run/builtin_plans.hpp"

namespace knit::bench {
namespace {

plan_case make(const std::string& tag, const std::string& mode, const std::string& server_mode,
               int threads, const std::string& spin, const std::string& park,
               const std::string& profile) {
  plan_case c;
  c.tag = tag;
  c.mode = mode;
  c.server_mode = server_mode;
  c.threads = threads;
  c.spin = spin;
  c.park = park;
  c.cost_profile = profile;
  return c;
}

// "t4": appended, since GCC 12 warns falsely (-Wrestrict) on "t" + std::to_string(n).
std::string tagged(const char* prefix, int n) {
  std::string s = prefix;
  s += std::to_string(n);
  return s;
}

// The former default_plan(), full_plan() and cost_sweep_plan(), verbatim but for names.
builtin_plan old_default_plan(const std::vector<std::string>& profiles) {
  builtin_plan p;
  p.name = "default";
  p.idle_s = 1;
  p.warmup_s = 2;
  p.window_s = 8;
  p.repeat = 3;
  p.conns = 50;
  for (const auto& prof : profiles) {
    for (const char* mode : {"sat", "rate"}) {
      p.cases.push_back(make("inline", mode, "inline", 0, "", "", prof));
      for (int n : {1, 2}) p.cases.push_back(make(tagged("t", n), mode, "pooled", n, "", "", prof));
      for (int n : {1, 2}) p.cases.push_back(make(tagged("a", n), mode, "asio", n, "", "", prof));
      p.cases.push_back(make("m2", mode, "multi", 2, "", "", prof));
      p.cases.push_back(make("auto1", mode, "auto", 1, "", "", prof));
    }
  }
  return p;
}

builtin_plan old_full_plan(const std::vector<std::string>& profiles) {
  builtin_plan p;
  p.name = "full";
  p.idle_s = 5;
  p.warmup_s = 6;
  p.window_s = 15;
  p.repeat = 3;
  p.conns = 100;
  for (const auto& prof : profiles) {
    for (const char* mode : {"sat", "rate"}) {
      p.cases.push_back(make("inline", mode, "inline", 0, "", "", prof));
      for (int n : {1, 2, 4, 8, 15}) {
        std::string t = tagged("t", n);
        p.cases.push_back(make(t, mode, "pooled", n, "", "", prof));
        p.cases.push_back(make(t + "old", mode, "pooled", n, std::to_string(n * 50), "1", prof));
        p.cases.push_back(make(t + "s50", mode, "pooled", n, "50", "", prof));
        p.cases.push_back(make(tagged("a", n), mode, "asio", n, "", "", prof));
      }
    }
  }
  return p;
}

builtin_plan old_cost_sweep_plan(const std::vector<std::string>& profiles) {
  builtin_plan p;
  p.name = "cost-sweep";
  p.idle_s = 1;
  p.warmup_s = 2;
  p.window_s = 6;
  p.repeat = 1;
  p.conns = 50;
  for (const auto& prof : profiles) {
    for (int cost : {0, 5, 10, 20, 50, 100, 200, 400}) {
      for (const char* mode : {"sat", "rate"}) {
        std::vector<plan_case> four = {make("inline", mode, "inline", 0, "", "", prof),
                                       make("t1", mode, "pooled", 1, "", "", prof),
                                       make("a1", mode, "asio", 1, "", "", prof),
                                       make("auto1", mode, "auto", 1, "", "", prof)};
        for (auto& c : four) {
          c.extra_cost_us = cost;
          p.cases.push_back(std::move(c));
        }
      }
    }
  }
  return p;
}

void expect_same(const builtin_plan& got, const builtin_plan& want) {
  EXPECT_EQ(got.name, want.name);
  EXPECT_EQ(got.idle_s, want.idle_s);
  EXPECT_EQ(got.warmup_s, want.warmup_s);
  EXPECT_EQ(got.window_s, want.window_s);
  EXPECT_EQ(got.repeat, want.repeat);
  EXPECT_EQ(got.conns, want.conns);
  ASSERT_EQ(got.cases.size(), want.cases.size());
  for (size_t i = 0; i < got.cases.size(); ++i)
    EXPECT_EQ(got.cases[i], want.cases[i])
        << got.name << " case " << i + 1 << " (" << want.cases[i].tag << ")";
}

TEST(builtin_plans, each_embedded_plan_parses) {
  ASSERT_EQ(embedded_plans().size(), 6u);
  for (const auto& e : embedded_plans()) {
    builtin_plan p = load_builtin_plan(e.name);
    EXPECT_FALSE(p.cases.empty()) << e.name;
  }
}

TEST(builtin_plans, equal_what_the_old_builders_made) {
  expect_same(load_builtin_plan("default"), old_default_plan({"bun"}));
  expect_same(load_builtin_plan("full"), old_full_plan({"bun"}));
  expect_same(load_builtin_plan("cost-sweep"), old_cost_sweep_plan({"native"}));
  const std::vector<std::string> both = {"bun", "native"};
  expect_same(load_builtin_plan("default", both), old_default_plan(both));
  expect_same(load_builtin_plan("full", both), old_full_plan(both));
  expect_same(load_builtin_plan("cost-sweep", both), old_cost_sweep_plan(both));
}

TEST(builtin_plans, embedded_text_is_the_file_in_bench_plans) {
  for (const auto& e : embedded_plans()) {
    std::ifstream in(std::string(KNIT_PLANS_DIR) + "/" + std::string(e.name) + ".json");
    ASSERT_TRUE(in) << e.name;
    std::ostringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), e.json) << e.name << ": rebuild to embed the edited plan";
  }
}

TEST(builtin_plans, reject_unknown_names_and_fields) {
  EXPECT_THROW(load_builtin_plan("nope"), plan_error);
  EXPECT_THROW(parse_builtin_plan("x", R"({"idle_s":1,"warmup_s":1,"window_s":1,"repeat":1,
      "conns":1,"profiles":["bun"],"cases":[],"extra":1})"),
               plan_error);
  EXPECT_THROW(parse_builtin_plan("x", R"({"idle_s":1,"warmup_s":1,"window_s":1,"repeat":1,
      "conns":1,"profiles":["bun"],"cases":[{"tag":"i","server_mode":"inline",
      "cost_profile":"bun"}]})"),
               plan_error);
}

TEST(builtin_plans, plan_objects_run_with_their_sizing_from_plan_files) {
  const std::string dir = KNIT_PLANS_DIR;
  plan_file_contents full = read_plan_file(dir + "/full.json", {});
  builtin_plan want = load_builtin_plan("full");
  EXPECT_EQ(full.cases, want.cases);
  ASSERT_TRUE(full.sizing);
  EXPECT_EQ(full.sizing->window_s, want.window_s);
  EXPECT_EQ(full.sizing->conns, want.conns);
  EXPECT_EQ(read_plan_file(dir + "/default.json", {"native"}).cases,
            load_builtin_plan("default", {"native"}).cases);
  // An array of cases is read as before, without sizing, and takes no profiles.
  plan_file_contents inline_only = read_plan_file(dir + "/inline-only.json", {});
  EXPECT_EQ(inline_only.cases, load_plan_file(dir + "/inline-only.json"));
  EXPECT_FALSE(inline_only.sizing);
  EXPECT_THROW(read_plan_file(dir + "/inline-only.json", {"bun"}), plan_error);
  EXPECT_THROW(read_plan_file("/nonexistent/plan.json", {}), plan_error);
}

}  // namespace
}  // namespace knit::bench

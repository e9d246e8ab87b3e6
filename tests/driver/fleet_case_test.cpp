// Cases behind HAProxy (plan field "fleet"): the field's checks, its round trip through plans
// and rows, the built-in fleet plan's shape (the report's "Behind HAProxy" section:
// report_test.py).
#include <gtest/gtest.h>

#include <string>

#include "driver/run/builtin_plans.hpp"
#include "driver/run/plan.hpp"
#include "driver/run/rows.hpp"

namespace knit::bench {
namespace {

TEST(fleet_case, FieldParsesAndRoundTrips) {
  auto cases = parse_plan(R"([{"tag":"f2","mode":"sat","server_mode":"pooled","threads":1,
                               "fleet":2}])");
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].fleet, 2);
  auto again = parse_plan(boost::json::serialize(plan_to_json(cases)));
  EXPECT_EQ(again, cases);
  EXPECT_EQ(parse_plan(R"([{"tag":"a","server_mode":"pooled"}])")[0].fleet, 0);
}

TEST(fleet_case, FieldIsChecked) {
  EXPECT_THROW(parse_plan(R"([{"tag":"f","server_mode":"pooled","fleet":65}])"), plan_error);
  EXPECT_THROW(parse_plan(R"([{"tag":"f","server_mode":"pooled","fleet":-1}])"), plan_error);
  EXPECT_THROW(parse_plan(R"([{"tag":"f","server_mode":"pooled","fleet":"2"}])"), plan_error);
  // An external peer is a server of its own: it cannot be put behind HAProxy as instances.
  EXPECT_THROW(parse_plan(R"([{"tag":"n","server_mode":"peer:nginx","command":"x","fleet":2}])"),
               plan_error);
}

TEST(fleet_case, BuiltinPlanComparesEachFleetWithTheServerAlone) {
  builtin_plan p = load_builtin_plan("fleet");
  int fleets = 0;
  for (const auto& f : p.cases) {
    if (f.fleet == 0) continue;
    ++fleets;
    bool alone = false;
    for (const auto& c : p.cases)
      alone |= c.fleet == 0 && c.mode == f.mode && c.server_mode == f.server_mode &&
               c.threads == f.threads && c.rate_per_route == f.rate_per_route && c.env == f.env;
    EXPECT_TRUE(alone) << f.tag << " " << f.mode << " has no server-alone case with its load";
  }
  EXPECT_GE(fleets, 2);
  EXPECT_TRUE(p.separate_cpus);
}

result_row row_of(const std::string& tag, int fleet, int rep, long long cpu_us, double p99,
                  long long rps) {
  result_row r;
  r.tag = tag;
  r.mode = "sat";
  r.threads = 1;
  r.server_mode = "pooled";
  r.cost_profile = "bun";
  r.fleet = fleet;
  r.rep = rep;
  r.total_rps = rps;
  r.cores = 0.9;
  r.cpu_us_per_req = cpu_us;
  for (const char* n : {"ping", "ssr", "jwt"}) {
    route_row_stats s;
    s.rps = static_cast<double>(rps) / 3;
    s.p50 = p99 / 2;
    s.p99 = p99;
    s.ok = 1;
    r.routes[n] = s;
  }
  return r;
}

TEST(fleet_case, RowRoundTripsItsFleet) {
  result_row r = row_of("f2", 2, 0, 20, 0.4, 1000);
  EXPECT_EQ(row_from_json_line(row_to_json_line(r)).fleet, 2);
  result_row alone = row_of("t1", 0, 0, 14, 0.3, 1000);
  EXPECT_EQ(row_to_json_line(alone).find("\"fleet\""), std::string::npos);  // rows as before
  EXPECT_EQ(row_from_json_line(row_to_json_line(alone)).fleet, 0);
}

}  // namespace
}  // namespace knit::bench

// --peer and --peer-routes: parsing, and the cases they add to a plan.
#include <gtest/gtest.h>

#include <string>

#include "driver/run/peers.hpp"
#include "driver/run/plan.hpp"

namespace knit::bench {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const plan_error& e) {
    return e.what();
  }
  return "";
}

TEST(peers, ParsesNameAndCommandAtTheFirstEquals) {
  peer_spec p = parse_peer_arg("nginx=exec nginx -g 'env X=1;' -c /tmp/n.conf");
  EXPECT_EQ(p.name, "nginx");
  EXPECT_EQ(p.command, "exec nginx -g 'env X=1;' -c /tmp/n.conf");
  EXPECT_TRUE(p.routes.empty());
  EXPECT_NE(error_of([] { parse_peer_arg("nginx"); }).find("NAME=VALUE"), std::string::npos);
  EXPECT_NE(error_of([] { parse_peer_arg("=cmd"); }).find("peer name"), std::string::npos);
  EXPECT_NE(error_of([] { parse_peer_arg("a/b=cmd"); }).find("peer name"), std::string::npos);
  EXPECT_NE(error_of([] { parse_peer_arg("bun=  "); }).find("command is empty"), std::string::npos);
}

TEST(peers, RoutesApplyToANamedPeer) {
  std::vector<peer_spec> peers = {parse_peer_arg("nginx=x"), parse_peer_arg("bun=y")};
  apply_peer_routes(peers, "nginx=ping");
  EXPECT_EQ(peers[0].routes, (std::vector<std::string>{"ping"}));
  EXPECT_TRUE(peers[1].routes.empty());
  apply_peer_routes(peers, "bun=jwt,ssr,jwt");
  EXPECT_EQ(peers[1].routes, (std::vector<std::string>{"jwt", "ssr"}));
  EXPECT_NE(error_of([&] { apply_peer_routes(peers, "caddy=ping"); }).find("no --peer caddy"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { apply_peer_routes(peers, "nginx=ping,html"); }).find("unknown route \"html\""),
      std::string::npos);
  EXPECT_NE(error_of([&] { apply_peer_routes(peers, "nginx="); }).find("at least one"),
            std::string::npos);
}

TEST(peers, OneCasePerModeAndScopeAfterThePlan) {
  std::vector<plan_case> cases = parse_plan(R"([
    {"tag":"inline","mode":"sat","server_mode":"inline","cost_profile":"bun"},
    {"tag":"t1","mode":"sat","threads":1,"cost_profile":"bun"},
    {"tag":"inline","mode":"rate","server_mode":"inline","cost_profile":"bun"},
    {"tag":"inline","mode":"sat","server_mode":"inline","cost_profile":"native","extra_cost_us":50}
  ])");
  std::vector<peer_spec> peers = {parse_peer_arg("nginx=exec nginx -p {host}:{port}")};
  apply_peer_routes(peers, "nginx=ping");
  add_peer_cases(cases, peers);
  ASSERT_EQ(cases.size(), 7u);
  const plan_case& a = cases[4];
  EXPECT_EQ(a.tag, "nginx");
  EXPECT_EQ(a.server_mode, "peer:nginx");
  EXPECT_EQ(a.mode, "sat");
  EXPECT_EQ(a.cost_profile, "bun");
  EXPECT_FALSE(a.extra_cost_us.has_value());
  EXPECT_EQ(a.peer_routes, (std::vector<std::string>{"ping"}));
  EXPECT_EQ(a.threads, 0);
  EXPECT_EQ(cases[5].mode, "rate");
  EXPECT_EQ(cases[6].cost_profile, "native");
  EXPECT_EQ(cases[6].extra_cost_us, std::optional<int>(50));
  // The plan as JSON (meta.json keeps it) still parses, peers included.
  EXPECT_EQ(parse_plan(boost::json::serialize(plan_to_json(cases))), cases);

  std::vector<plan_case> again = cases;
  EXPECT_NE(error_of([&] {
              add_peer_cases(again, {parse_peer_arg("t1=x")});
            }).find("already has a case tagged"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              add_peer_cases(again, {parse_peer_arg("b=x"), parse_peer_arg("b=y")});
            }).find("twice"),
            std::string::npos);
}

TEST(peers, CommandSubstitution) {
  EXPECT_EQ(peer_command_text("serve --listen {host}:{port} --again {port}", "127.0.0.1", 3107),
            "serve --listen 127.0.0.1:3107 --again 3107");
  EXPECT_EQ(peer_command_text("no placeholders", "h", 1), "no placeholders");
}

}  // namespace
}  // namespace knit::bench

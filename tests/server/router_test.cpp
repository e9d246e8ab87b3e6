// router.hpp: Hono's matching - path only, exact, method checked, HEAD served by GET.
#include "http/router.hpp"  // first: the header must be self-contained

#include <gtest/gtest.h>

namespace knit_server {
namespace {

using boost::beast::http::verb;

TEST(router, matches_the_reference_routes) {
  EXPECT_EQ(match_route(verb::get, "/ping"), route::ping);
  EXPECT_EQ(match_route(verb::head, "/ping"), route::ping);
  EXPECT_EQ(match_route(verb::post, "/ssr"), route::ssr);
  EXPECT_EQ(match_route(verb::post, "/jwt"), route::jwt);
}

TEST(router, ignores_the_query_string) {
  EXPECT_EQ(match_route(verb::get, "/ping?x=1"), route::ping);
  EXPECT_EQ(match_route(verb::post, "/ssr?"), route::ssr);
}

TEST(router, matches_the_operations_endpoints) {
  EXPECT_EQ(match_route(verb::get, "/livez"), route::livez);
  EXPECT_EQ(match_route(verb::head, "/livez"), route::livez);
  EXPECT_EQ(match_route(verb::get, "/readyz?verbose"), route::readyz);
  EXPECT_EQ(match_route(verb::head, "/readyz"), route::readyz);
  EXPECT_EQ(match_route(verb::get, "/metrics"), route::metrics);
  EXPECT_EQ(match_route(verb::post, "/readyz"), route::not_found);
  EXPECT_EQ(match_route(verb::get, "/livez/"), route::not_found);
  EXPECT_EQ(match_route(verb::get, "/healthz"), route::not_found);
  EXPECT_EQ(match_route(verb::get, "/Metrics"), route::not_found);
  EXPECT_TRUE(is_ops_endpoint(route::livez));
  EXPECT_TRUE(is_ops_endpoint(route::readyz));
  EXPECT_TRUE(is_ops_endpoint(route::metrics));
  EXPECT_FALSE(is_ops_endpoint(route::ping));
  EXPECT_FALSE(is_ops_endpoint(route::not_found));
  EXPECT_FALSE(is_heavy(route::metrics));
}

TEST(router, names_every_route) {
  EXPECT_EQ(to_string(route::ping), "ping");
  EXPECT_EQ(to_string(route::readyz), "readyz");
  EXPECT_EQ(to_string(route::metrics), "metrics");
  EXPECT_EQ(to_string(route::not_found), "other");
}

TEST(router, everything_else_is_not_found) {
  EXPECT_EQ(match_route(verb::post, "/ping"), route::not_found);
  EXPECT_EQ(match_route(verb::get, "/ssr"), route::not_found);
  EXPECT_EQ(match_route(verb::put, "/jwt"), route::not_found);
  EXPECT_EQ(match_route(verb::get, "/ping/"), route::not_found);
  EXPECT_EQ(match_route(verb::get, "/"), route::not_found);
  EXPECT_EQ(match_route(verb::get, ""), route::not_found);
  EXPECT_EQ(match_route(verb::get, "*"), route::not_found);
}

TEST(router, heavy_routes) {
  EXPECT_TRUE(is_heavy(route::ssr));
  EXPECT_TRUE(is_heavy(route::jwt));
  EXPECT_FALSE(is_heavy(route::ping));
  EXPECT_FALSE(is_heavy(route::not_found));
}

}  // namespace
}  // namespace knit_server

// router.hpp: Hono's matching - path only, exact, method checked, HEAD served by GET.
#include "router.hpp"  // first: the header must be self-contained

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

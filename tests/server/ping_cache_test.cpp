// The /ping body cache: the body of the current millisecond, rendered once, in either mode.
#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "http/ping_cache.hpp"
#include "routes/routes.hpp"

namespace {

using namespace std::chrono_literals;
using knit_server::ping_cache;
namespace routes = knit_server::routes;

const std::chrono::system_clock::time_point kAt{1'700'000'000'123ms};

TEST(ping_cache, serves_the_body_of_the_millisecond) {
  ping_cache cache(false);
  const std::string& first = cache.body(kAt);
  EXPECT_EQ(first, routes::ping_body("knit", kAt));
  // Within the same millisecond: the same string, not re-rendered.
  const std::string* same = &cache.body(kAt + 400us);
  EXPECT_EQ(same, &first);
  EXPECT_EQ(*same, routes::ping_body("knit", kAt));
  // The next millisecond renders the new timestamp.
  EXPECT_EQ(cache.body(kAt + 1ms), routes::ping_body("knit", kAt + 1ms));
}

TEST(ping_cache, per_thread_caches_do_not_share_a_string) {
  ping_cache cache(true);
  const std::string* here = &cache.body(kAt);
  const std::string* there = nullptr;
  std::string there_body;
  std::thread other([&] {
    there = &cache.body(kAt + 2ms);
    there_body = *there;
  });
  other.join();
  EXPECT_NE(here, there);
  EXPECT_EQ(*here, routes::ping_body("knit", kAt));
  EXPECT_EQ(there_body, routes::ping_body("knit", kAt + 2ms));
}

}  // namespace

// heavy_wire.hpp: a heavy call's request and answer survive the trip as bytes, and anything
// shorter or different from what the encoder writes is refused, never read past.
#include "placement/heavy_wire.hpp"  // first: the header must be self-contained

#include <string>

#include <gtest/gtest.h>

namespace knit_server {
namespace {

TEST(heavy_wire, RequestRoundTripKeepsTheJobAndTheBody) {
  const std::string secret = std::string("k\0y", 3);  // any bytes, NUL included
  const heavy_job job{route::jwt, 72, secret, true};
  const std::string body = R"({"user":{"id":"u_42"}})";
  const std::string bytes = encode_heavy_request(job, body);
  EXPECT_EQ(bytes.size(), kHeavyRequestHeader + secret.size() + body.size());
  const auto r = decode_heavy_request(bytes);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->job.which, route::jwt);
  EXPECT_EQ(r->job.cost_us, 72U);
  EXPECT_EQ(r->job.jwt_secret, secret);
  EXPECT_TRUE(r->job.measure);
  EXPECT_EQ(r->body, body);

  const auto empty = decode_heavy_request(encode_heavy_request({route::ssr, 0, "", false}, ""));
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->job.which, route::ssr);
  EXPECT_EQ(empty->body, "");
}

TEST(heavy_wire, MalformedRequestsAreRefused) {
  const std::string good = encode_heavy_request({route::ssr, 5, "secret", false}, "{}");
  for (std::size_t n = 0; n < kHeavyRequestHeader + 6; ++n) {
    // Cut inside the header or the secret (whose length says 6 bytes follow).
    EXPECT_FALSE(decode_heavy_request(good.substr(0, n))) << n;
  }
  std::string bad = good;
  bad[1] = 'X';
  EXPECT_FALSE(decode_heavy_request(bad));
  bad = good;
  bad[2] = 2;  // no such route
  EXPECT_FALSE(decode_heavy_request(bad));
  bad = good;
  bad[8] = '\xff';  // secret length far past the end
  EXPECT_FALSE(decode_heavy_request(bad));
}

TEST(heavy_wire, AnswerRoundTripKeepsStatusBodyAndCpu) {
  const heavy_output out{boost::beast::http::status::bad_request, "Bad request", 123456789};
  const auto back = decode_heavy_output(encode_heavy_output(out));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->status, out.status);
  EXPECT_EQ(back->body, out.body);
  EXPECT_EQ(back->cpu_ns, out.cpu_ns);
}

TEST(heavy_wire, MalformedAnswersAreRefused) {
  const std::string good = encode_heavy_output({boost::beast::http::status::ok, "page", 0});
  for (std::size_t n = 0; n < kHeavyAnswerHeader; ++n) {
    EXPECT_FALSE(decode_heavy_output(good.substr(0, n))) << n;
  }
  std::string bad = good;
  bad[0] = 'X';
  EXPECT_FALSE(decode_heavy_output(bad));
  bad = good;
  bad[4] = 0;  // status 0
  bad[5] = 0;
  EXPECT_FALSE(decode_heavy_output(bad));
  EXPECT_TRUE(decode_heavy_output(good.substr(0, kHeavyAnswerHeader)));  // an empty body
}

}  // namespace
}  // namespace knit_server

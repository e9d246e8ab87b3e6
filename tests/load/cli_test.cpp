// Tests for knit-load's flag parsing and request bytes.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "request.hpp"

using namespace knit_load;

TEST(cli, Defaults) {
  const load_config c = parse_cli({"--route", "ping:GET:/ping:100"});
  EXPECT_EQ(c.host, "127.0.0.1");
  EXPECT_EQ(c.port, 3000);
  EXPECT_EQ(c.duration_s, 10.0);
  EXPECT_EQ(c.threads, 1u);
  EXPECT_EQ(c.timeout_ms, 10000u);
  EXPECT_TRUE(c.json_path.empty());
  ASSERT_EQ(c.routes.size(), 1u);
  EXPECT_EQ(c.routes[0].name, "ping");
  EXPECT_EQ(c.routes[0].method, "GET");
  EXPECT_EQ(c.routes[0].path, "/ping");
  EXPECT_EQ(c.routes[0].connections, 100u);
  EXPECT_FALSE(c.routes[0].open_loop());
}

TEST(cli, AllFlagsAndBodyFile) {
  const std::string body_path = ::testing::TempDir() + "knit_load_cli_body.json";
  { std::ofstream(body_path) << R"({"name":"Ari"})"; }
  const load_config c =
      parse_cli({"--host", "localhost", "--port=3001", "--duration", "1.5", "--threads", "2",
                 "--json", "-", "--timeout-ms", "250", "--route", "ping:GET:/ping:100", "--route",
                 "ssr:POST:/ssr:100:2000:" + body_path});
  EXPECT_EQ(c.host, "localhost");
  EXPECT_EQ(c.port, 3001);
  EXPECT_EQ(c.duration_s, 1.5);
  EXPECT_EQ(c.threads, 2u);
  EXPECT_EQ(c.json_path, "-");
  EXPECT_EQ(c.timeout_ms, 250u);
  ASSERT_EQ(c.routes.size(), 2u);
  EXPECT_TRUE(c.routes[1].open_loop());
  EXPECT_EQ(c.routes[1].rate, 2000.0);
  EXPECT_EQ(c.routes[1].body, R"({"name":"Ari"})");
  std::remove(body_path.c_str());
}

TEST(cli, BothValueConventionsAndTheLastValueWins) {
  const load_config a =
      parse_cli({"--host=h", "--duration=2", "--threads=3", "--json=out.json", "--timeout-ms=5",
                 "--route=ping:GET:/ping:1", "--port", "1", "--port", "2"});
  EXPECT_EQ(a.host, "h");
  EXPECT_EQ(a.duration_s, 2.0);
  EXPECT_EQ(a.threads, 3u);
  EXPECT_EQ(a.json_path, "out.json");
  EXPECT_EQ(a.timeout_ms, 5u);
  EXPECT_EQ(a.port, 2);
  ASSERT_EQ(a.routes.size(), 1u);
  EXPECT_EQ(a.routes[0].name, "ping");
}

TEST(cli, HelpIsGenerated) {
  for (const std::string flag : {"--help", "-h"}) {
    try {
      parse_cli({flag});
      ADD_FAILURE() << flag << ": no help";
    } catch (const cli_help& h) {
      EXPECT_NE(std::string(h.what()).find("--timeout-ms"), std::string::npos) << h.what();
    }
  }
}

TEST(cli, RateZeroOrEmptyIsClosedLoop) {
  EXPECT_FALSE(parse_route("a:GET:/:1:0").open_loop());
  EXPECT_FALSE(parse_route("a:GET:/:1:").open_loop());
  EXPECT_EQ(parse_route("a:GET:/:1:0.5").rate, 0.5);
}

TEST(cli, Rejects) {
  const std::vector<std::vector<std::string>> bad = {
      {},
      {"--route", "ping:GET:/ping"},
      {"--route", "ping:GET:ping:1"},
      {"--route", "ping:get:/ping:1"},
      {"--route", "ping:GET:/ping:0"},
      {"--route", "ping:GET:/ping:x"},
      {"--route", "ping:GET:/ping:1:-5"},
      {"--route", "ping:GET:/ping:1", "--route", "ping:GET:/other:1"},
      {"--route", "ping:POST:/ping:1:0:/nonexistent/body.json"},
      {"--route", "ping:GET:/ping:1", "--port", "70000"},
      {"--route", "ping:GET:/ping:1", "--duration", "0"},
      {"--route", "ping:GET:/ping:1", "--threads"},
      {"--route", "ping:GET:/ping:1", "--bogus"},
      {"--route", "ping:GET:/ping:1", "extra"},
      {"--route", "ping:GET:/ping:1", "--duration", "inf"},
      {"--route", "ping:GET:/ping:1", "--threads", "0"},
      {"--route", "ping:GET:/ping:1", "--timeout-ms", "-1"},
      {"--route", "ping:GET:/ping:1", "--host", ""},
      {"--route", "ping:GET:/ping:1", "--json="},
  };
  for (const auto& args : bad) {
    EXPECT_THROW(parse_cli(args), cli_error) << (args.empty() ? "" : args.back());
  }
}

TEST(request, GetWithoutBody) {
  route_spec r = parse_route("ping:GET:/ping:1");
  EXPECT_EQ(build_request(r, "127.0.0.1", 3000),
            "GET /ping HTTP/1.1\r\nHost: 127.0.0.1:3000\r\n\r\n");
}

TEST(request, PostWithBody) {
  route_spec r = parse_route("ssr:POST:/ssr:1:0:body.json");
  r.body = R"({"a":1})";
  EXPECT_EQ(build_request(r, "10.0.0.3", 3000),
            "POST /ssr HTTP/1.1\r\nHost: 10.0.0.3:3000\r\ncontent-type: application/json\r\n"
            "content-length: 7\r\n\r\n{\"a\":1}");
}

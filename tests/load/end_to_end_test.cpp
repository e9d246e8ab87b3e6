// End-to-end: knit-load's runner and JSON against the in-test HTTP server, closed and open loop.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>

#include "cli.hpp"
#include "config.hpp"
#include "report_json.hpp"
#include "runner.hpp"
#include "tiny_http_server.hpp"

using namespace knit_load;
namespace json = boost::json;

namespace {

load_config config_for(std::uint16_t port, double duration_s = 1.0) {
  load_config c;
  c.port = port;
  c.duration_s = duration_s;
  return c;
}

// Every route object must have these, with counts that add up.
void check_route_json(const json::object& r, bool open) {
  const json::object& s = r.at("summary").as_object();
  for (const char* key :
       {"requestsPerSec", "successRate", "total", "requests", "successes", "errors", "timeouts"}) {
    EXPECT_TRUE(s.contains(key)) << key;
  }
  const json::object& lat = r.at("latencyPercentiles").as_object();
  for (const char* key : {"p50", "p90", "p99", "p99.9", "max"})
    EXPECT_TRUE(lat.contains(key)) << key;
  EXPECT_LE(lat.at("p50").as_double(), lat.at("p99").as_double());
  EXPECT_LE(lat.at("p99").as_double(), lat.at("max").as_double());
  const json::object& errs = r.at("errorDistribution").as_object();
  for (const char* key : {"connect", "read", "timeout"}) EXPECT_TRUE(errs.contains(key)) << key;

  std::int64_t by_status = 0;
  for (const auto& kv : r.at("statusCodeDistribution").as_object())
    by_status += kv.value().to_number<std::int64_t>();
  const std::int64_t requests = s.at("requests").to_number<std::int64_t>();
  EXPECT_EQ(by_status, requests);
  EXPECT_EQ(s.at("successes").to_number<std::int64_t>() + s.at("non2xx").to_number<std::int64_t>(),
            requests);
  EXPECT_EQ(r.contains("rate"), open);
  EXPECT_EQ(r.contains("uncorrectedLatencyPercentiles"), open);
  if (open) {
    const json::object& rate = r.at("rate").as_object();
    EXPECT_TRUE(rate.contains("target"));
    EXPECT_TRUE(rate.contains("achieved"));
    EXPECT_TRUE(rate.at("met").is_bool());
  }
}

}  // namespace

TEST(end_to_end, ClosedLoopMixedRoutes) {
  knit_load_test::tiny_http_server server;
  load_config cfg = config_for(server.port());
  cfg.threads = 2;
  for (const char* spec :
       {"ok:GET:/ok:8", "err:GET:/status/500:3", "chunk:POST:/chunked:4", "close:GET:/close:2"}) {
    cfg.routes.push_back(parse_route(spec));
  }
  cfg.routes[2].body_file = "inline";
  cfg.routes[2].body = R"({"x":1})";

  const run_result result = run_load(cfg);
  ASSERT_EQ(result.routes.size(), 4u);
  for (const route_result& r : result.routes) {
    SCOPED_TRACE(r.spec.name);
    EXPECT_GT(r.stats.requests, 0u);
    EXPECT_EQ(r.stats.errors(), 0u);
    EXPECT_EQ(r.stats.latency.count(), r.stats.requests);
    EXPECT_GE(r.stats.sent, r.stats.requests);
    // Every request written in the window ended exactly one way.
    EXPECT_EQ(r.stats.sent, r.stats.requests + r.stats.in_flight_at_end +
                                (r.stats.errors() - r.stats.connect_errors));
  }
  EXPECT_EQ(result.routes[0].stats.successes, result.routes[0].stats.requests);
  EXPECT_EQ(result.routes[0].stats.status_counts[200], result.routes[0].stats.requests);
  EXPECT_EQ(result.routes[1].stats.successes, 0u);
  EXPECT_EQ(result.routes[1].stats.status_counts[500], result.routes[1].stats.requests);
  EXPECT_EQ(result.routes[2].stats.successes, result.routes[2].stats.requests);
  EXPECT_EQ(result.routes[3].stats.successes, result.routes[3].stats.requests);

  const json::object doc = to_json(result);
  EXPECT_EQ(doc.at("tool").as_string(), "knit-load");
  EXPECT_EQ(doc.at("version").to_number<std::int64_t>(), 1);
  EXPECT_EQ(doc.at("threads").to_number<std::int64_t>(), 2);
  EXPECT_EQ(doc.at("port").to_number<int>(), server.port());
  EXPECT_GE(doc.at("gen_cpu_s").as_double(), 0.0);
  EXPECT_TRUE(doc.contains("gen_cores"));
  const json::object& routes = doc.at("routes").as_object();
  ASSERT_EQ(routes.size(), 4u);
  for (const char* name : {"ok", "err", "chunk", "close"}) {
    SCOPED_TRACE(name);
    check_route_json(routes.at(name).as_object(), false);
    EXPECT_EQ(routes.at(name).at("mode").as_string(), "closed");
  }
  EXPECT_EQ(routes.at("ok").at("summary").at("successRate").as_double(), 1.0);
  EXPECT_EQ(routes.at("err").at("summary").at("successRate").as_double(), 0.0);
  EXPECT_EQ(routes.at("ok").at("connections").to_number<int>(), 8);
  // The JSON survives a round trip through text (doubles only approximately: Boost.JSON
  // 1.81's default parser is not bit-exact).
  const json::object back = json::parse(json::serialize(doc)).as_object();
  EXPECT_EQ(back.at("routes").as_object().size(), 4u);
  EXPECT_EQ(back.at("routes").at("ok").at("summary").at("requests").to_number<std::int64_t>(),
            static_cast<std::int64_t>(result.routes[0].stats.requests));
  EXPECT_NEAR(back.at("routes").at("ok").at("latencyPercentiles").at("p99").as_double(),
              doc.at("routes").at("ok").at("latencyPercentiles").at("p99").as_double(), 1e-12);
}

TEST(end_to_end, OpenLoop) {
  knit_load_test::tiny_http_server server;
  load_config cfg = config_for(server.port());
  cfg.routes.push_back(parse_route("ping:GET:/ping:4:500"));
  cfg.routes.push_back(parse_route("sat:GET:/ping:2"));

  const run_result result = run_load(cfg);
  const route_result& open = result.routes[0];
  EXPECT_GT(open.stats.requests, 0u);
  EXPECT_EQ(open.stats.errors(), 0u);
  EXPECT_EQ(open.target_rate, 500.0);
  EXPECT_EQ(open.stats.uncorrected.count(), open.stats.requests);
  // Intended <= actual send for every request, so the corrected figures dominate.
  EXPECT_GE(open.stats.latency.max(), open.stats.uncorrected.max());
  EXPECT_GE(open.stats.latency.percentile(50), open.stats.uncorrected.percentile(50));
  // Never more sent than the schedule allows within the window.
  EXPECT_LE(open.stats.sent, 501u);

  const json::object doc = to_json(result);
  const json::object& routes = doc.at("routes").as_object();
  check_route_json(routes.at("ping").as_object(), true);
  check_route_json(routes.at("sat").as_object(), false);
  EXPECT_EQ(routes.at("ping").at("mode").as_string(), "open");
  EXPECT_EQ(routes.at("ping").at("rate").at("target").as_double(), 500.0);
}

TEST(end_to_end, TimeoutCountsAsErrorAndReconnects) {
  knit_load_test::tiny_http_server server;
  load_config cfg = config_for(server.port());
  cfg.timeout_ms = 100;
  cfg.routes.push_back(parse_route("hang:GET:/hang:2"));
  const run_result result = run_load(cfg);
  const route_load_stats& s = result.routes[0].stats;
  EXPECT_EQ(s.requests, 0u);
  EXPECT_GT(s.timeouts, 0u);
  EXPECT_EQ(s.errors(), s.timeouts);
  EXPECT_EQ(to_json(result)
                .at("routes")
                .at("hang")
                .at("errorDistribution")
                .at("timeout")
                .to_number<std::int64_t>(),
            static_cast<std::int64_t>(s.timeouts));
}

TEST(end_to_end, RefusedConnectionsAreConnectErrors) {
  // Find a port nobody listens on: bind an ephemeral one, then release it.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);

  load_config cfg = config_for(ntohs(addr.sin_port), 0.3);
  cfg.routes.push_back(parse_route("dead:GET:/:2"));
  const run_result result = run_load(cfg);
  const route_load_stats& s = result.routes[0].stats;
  EXPECT_EQ(s.requests, 0u);
  EXPECT_GT(s.connect_errors, 0u);
  EXPECT_EQ(to_json(result).at("routes").at("dead").at("summary").at("successRate").as_double(),
            0.0);
}

// The heavy routes' placements on their own, without sockets: each either returns a call's
// outcome at once (inline, refused) or calls the handler exactly once, on the thread that runs
// the io_context.
#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <knit/asio.hpp>
#include <knit/knit.hpp>

#include "placement/heavy_placement.hpp"
#include "telemetry/stats.hpp"

namespace {

using namespace knit_server;
using boost::beast::http::status;

server_config test_config() {
  server_config cfg;
  cfg.jwt_secret = "placement-test-secret-0123456789";
  return cfg;
}

// Records what a placement hands back, and on which thread.
struct recorder {
  int calls = 0;
  heavy_outcome out;
  std::thread::id thread;
  auto handler() {
    return [this](heavy_outcome&& o) {
      ++calls;
      out = std::move(o);
      thread = std::this_thread::get_id();
    };
  }
};

TEST(placement, inline_returns_the_routes_outcome_from_start) {
  const server_config cfg = test_config();
  heavy_placement placement(std::in_place_type<inline_placement>, cfg);
  recorder r;
  std::optional<heavy_outcome> out = placement.start(route::ssr, R"({"name":"Ari"})", r.handler());
  ASSERT_TRUE(out);
  EXPECT_EQ(out->what, heavy_result::ok);
  EXPECT_EQ(out->status, status::ok);
  EXPECT_EQ(out->type, content_type::html);
  EXPECT_NE(out->page.find("<h1>Ari</h1>"), std::string::npos);

  out = placement.start(route::jwt, "{}", r.handler());
  ASSERT_TRUE(out);
  EXPECT_EQ(out->what, heavy_result::ok);  // the route's own 400, not the server's
  EXPECT_EQ(out->status, status::bad_request);
  EXPECT_EQ(out->type, content_type::json_utf8);
  EXPECT_EQ(out->page, "Bad request");
  EXPECT_EQ(r.calls, 0);  // an outcome known at once never goes through the handler
  EXPECT_EQ(placement.auto_json(), std::nullopt);
}

TEST(placement, asio_pool_posts_the_result_back_to_the_io_context) {
  const server_config cfg = test_config();
  boost::asio::io_context io{1};
  boost::asio::thread_pool threads(1);
  heavy_placement placement(std::in_place_type<asio_pool_placement>, cfg, threads, io);
  recorder r;
  EXPECT_FALSE(placement.start(route::jwt, R"({"user":{"id":"u_1"}})", r.handler()));
  // The job runs on the thread pool; its result waits for the io_context.
  const auto work = boost::asio::make_work_guard(io);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (r.calls == 0 && std::chrono::steady_clock::now() < give_up) {
    io.run_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(r.calls, 1);
  EXPECT_EQ(r.thread, std::this_thread::get_id());
  EXPECT_EQ(r.out.what, heavy_result::ok);
  EXPECT_EQ(r.out.status, status::ok);
  EXPECT_EQ(r.out.type, content_type::json_utf8);
  EXPECT_NE(r.out.page.find("\"sub\":\"u_1\""), std::string::npos);
  threads.join();
}

// Runs io until `r` has seen `calls` results (or 10 s have passed).
void run_until(boost::asio::io_context& io, const recorder& r, int calls) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (r.calls < calls && std::chrono::steady_clock::now() < give_up) {
    io.restart();
    io.run_for(std::chrono::milliseconds(10));
  }
}

TEST(placement, pool_refuses_a_call_that_admission_control_turns_away) {
  server_config cfg = test_config();
  cfg.max_queued = 1;         // a second call finds one ahead: refused
  cfg.ssr_cost_us = 200'000;  // the first is still running when the second comes
  boost::asio::io_context io{1};
  knit::pool_options options;
  options.threads = 1;
  knit::pool pool(options);
  knit::asio_host host(io, pool);
  heavy_placement placement(std::in_place_type<pool_placement>, cfg, host);

  recorder first;
  recorder second;
  EXPECT_FALSE(placement.start(route::ssr, "{}", first.handler()));
  const std::optional<heavy_outcome> refused = placement.start(route::ssr, "{}", second.handler());
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->what, heavy_result::refused);
  EXPECT_EQ(refused->status, status::service_unavailable);
  EXPECT_TRUE(refused->retry_after);
  EXPECT_EQ(refused->reason, refusal_reason::queue_count);
  // Counted where it was refused: knit-stats' "rejected" and /readyz's last refusal.
  EXPECT_EQ(placement.ledger().rejected().queue_count.load(), 1U);
  EXPECT_EQ(placement.ledger().rejected().queue_delay.load(), 0U);
  EXPECT_NE(placement.ledger().health().last_refusal(), health_events::clock::time_point::min());

  run_until(io, first, 1);
  EXPECT_EQ(first.calls, 1);
  EXPECT_EQ(first.out.what, heavy_result::ok);
  EXPECT_EQ(first.out.status, status::ok);
  EXPECT_EQ(second.calls, 0);  // a refused call's handler is never called
  pool.shutdown();
}

TEST(placement, pool_refuses_a_call_not_started_by_its_queue_wait_deadline) {
  server_config cfg = test_config();
  // Long enough that the free worker of step 2 starts its call in time on a loaded machine.
  cfg.max_queue_wait_ms = std::chrono::milliseconds(500);
  cfg.jwt_cost_us = 0;
  boost::asio::io_context io{1};
  knit::pool_options options;
  options.threads = 1;
  knit::pool pool(options);
  knit::asio_host host(io, pool);
  heavy_placement placement(std::in_place_type<pool_placement>, cfg, host);

  // The only worker is held by a call outside the placement until the test lets it go, so
  // the placement's call cannot start before its deadline, however slow the machine.
  std::atomic<bool> release{false};
  int blocker_done = 0;
  ASSERT_FALSE(host.submit(
      [&release](int) {
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!release.load() && std::chrono::steady_clock::now() < give_up) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return 0;
      },
      0, [&blocker_done](knit::result<int>) { ++blocker_done; }));

  // Cold: no estimate yet, so admission accepts; the deadline then refuses it.
  recorder queued;
  EXPECT_FALSE(placement.start(route::jwt, R"({"user":{"id":"u_1"}})", queued.handler()));
  run_until(io, queued, 1);
  ASSERT_EQ(queued.calls, 1);
  EXPECT_EQ(queued.thread, std::this_thread::get_id());
  EXPECT_EQ(queued.out.what, heavy_result::refused);
  EXPECT_EQ(queued.out.status, status::service_unavailable);
  EXPECT_TRUE(queued.out.retry_after);
  EXPECT_EQ(queued.out.reason, refusal_reason::queue_wait);
  EXPECT_EQ(placement.ledger().rejected().queue_wait.load(), 1U);
  EXPECT_EQ(placement.ledger().rejected().queue_delay.load(), 0U);
  EXPECT_NE(placement.ledger().health().last_refusal(), health_events::clock::time_point::min());

  // Once the worker is free a call starts at once and is answered, never refused.
  release = true;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (blocker_done == 0 && std::chrono::steady_clock::now() < give_up) {
    io.restart();
    io.run_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(blocker_done, 1);
  recorder next;
  EXPECT_FALSE(placement.start(route::jwt, R"({"user":{"id":"u_2"}})", next.handler()));
  run_until(io, next, 1);
  ASSERT_EQ(next.calls, 1);
  EXPECT_EQ(next.out.what, heavy_result::ok);
  EXPECT_EQ(next.out.status, status::ok);
  EXPECT_EQ(placement.ledger().rejected().queue_wait.load(), 1U);
  pool.shutdown();
}

TEST(placement, auto_reports_each_route_per_path) {
  const server_config cfg = test_config();
  boost::asio::io_context io{1};
  knit::pool pool(knit::pool_options{});
  knit::asio_host host(io, pool);
  heavy_placement placement(std::in_place_type<auto_placement>, cfg, host, offload_options{});
  EXPECT_EQ(placement.auto_json(), R"({"ssr":{"inline":0,"pooled":0,"avg_ns":0},)"
                                   R"("jwt":{"inline":0,"pooled":0,"avg_ns":0}})");

  // A route starts on the pool, and its first call is measured there.
  recorder r;
  EXPECT_FALSE(placement.start(route::jwt, R"({"user":{"id":"u_1"}})", r.handler()));
  run_until(io, r, 1);
  ASSERT_EQ(r.calls, 1);
  EXPECT_EQ(r.out.what, heavy_result::ok);
  EXPECT_EQ(r.out.status, status::ok);
  const std::string json = placement.auto_json().value();
  EXPECT_NE(json.find(R"("jwt":{"inline":0,"pooled":1,"avg_ns":)"), std::string::npos) << json;
  EXPECT_EQ(json.find(R"("jwt":{"inline":0,"pooled":1,"avg_ns":0})"), std::string::npos) << json;
  pool.shutdown();
}

TEST(placement, refusals_count_under_their_reason) {
  rejection_counters rejected;
  rejected.count(refusal_reason::queue_delay);
  rejected.count(refusal_reason::queue_count);
  rejected.count(refusal_reason::queue_count);
  rejected.count(refusal_reason::pool_full);
  rejected.count(refusal_reason::write_budget);
  rejected.count(refusal_reason::queue_wait);
  EXPECT_EQ(rejected.queue_wait.load(), 1U);
  EXPECT_EQ(rejected.queue_delay.load(), 1U);
  EXPECT_EQ(rejected.queue_count.load(), 2U);
  EXPECT_EQ(rejected.pool_full.load(), 1U);
  EXPECT_EQ(rejected.write_budget.load(), 1U);
}

}  // namespace

// metrics_exposition.hpp and request_metrics.hpp: the page parses as the text format 0.0.4
// (prometheus_text.hpp), its histograms are cumulative, its numbers are the snapshot's, and a
// host label appears only with several hosts.
#include "ops/metrics_exposition.hpp"  // first: the header must be self-contained

#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "prometheus_text.hpp"

namespace knit_server {
namespace {

using knit_test::histogram_errors;
using knit_test::parse_prometheus_text;

std::string joined(const std::vector<std::string>& errors) {
  std::string all;
  for (const std::string& e : errors) all += e + '\n';
  return all;
}

TEST(request_metrics, CountsByRouteCodeAndBucket) {
  request_metrics m(false);
  m.record(route::ping, 200, 3'000);          // 3 µs: the first bucket (le 5 µs)
  m.record(route::ping, 200, 5'000);          // on the bound: still the first (le)
  m.record(route::ping, 200, 5'001);          // just over: the second (le 10 µs)
  m.record(route::ping, 200, 100'000);        // on the old first bound, 100 µs: the fifth
  m.record(route::ssr, 503, 20'000'000'000);  // 20 s: +Inf
  m.record(route::not_found, 418, 1);         // an uncounted code: "other"
  request_totals t;
  m.add_to(t);
  EXPECT_EQ(t.responses[0][code_slot(200)], 4U);
  EXPECT_EQ(t.buckets[0][0], 2U);
  EXPECT_EQ(t.buckets[0][1], 1U);
  EXPECT_EQ(t.buckets[0][2] + t.buckets[0][3], 0U);
  EXPECT_EQ(t.buckets[0][4], 1U);
  EXPECT_EQ(t.sum_ns[0], 113'001U);
  EXPECT_EQ(t.count(route::ping), 4U);
  const auto ssr = static_cast<std::size_t>(route::ssr);
  EXPECT_EQ(t.responses[ssr][code_slot(503)], 1U);
  EXPECT_EQ(t.buckets[ssr][kLatencyBuckets - 1], 1U);
  EXPECT_EQ(t.responses[static_cast<std::size_t>(route::not_found)][kCountedCodes.size()], 1U);
}

TEST(request_metrics, EveryBoundIsItsOwnBucketsTop) {
  // Each bound lands in its bucket and one nanosecond more in the next: the ns list and the
  // label list (checked equal at compile time) cut where the page says.
  for (std::size_t i = 0; i < kLatencyBoundsNs.size(); ++i) {
    EXPECT_EQ(latency_bucket(kLatencyBoundsNs[i]), i) << kLatencyBoundLabels[i];
    EXPECT_EQ(latency_bucket(kLatencyBoundsNs[i] + 1), i + 1) << kLatencyBoundLabels[i];
  }
  EXPECT_EQ(latency_bucket(0), 0U);
  EXPECT_EQ(label_ns("0.000005"), 5'000U);
  EXPECT_EQ(label_ns("2.5"), 2'500'000'000U);
}

TEST(request_metrics, SharedByThreadsLosesNoCount) {
  request_metrics m(true);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 10'000; ++j) m.record(route::jwt, 200, 1'000);
    });
  }
  for (std::thread& t : threads) t.join();
  request_totals t;
  m.add_to(t);
  EXPECT_EQ(t.count(route::jwt), 40'000U);
  EXPECT_EQ(t.buckets[static_cast<std::size_t>(route::jwt)][0], 40'000U);
}

metrics_snapshot two_hosts_and_a_pool(knit::pool_stats& pool) {
  metrics_snapshot s;
  for (int h = 0; h < 2; ++h) {
    request_metrics m(false);
    for (int i = 0; i <= h; ++i) m.record(route::ping, 200, 300'000);  // host h: h + 1 pings
    m.record(route::ssr, 504, 2'000'000'000);
    host_metrics& hm = s.hosts.emplace_back();
    m.add_to(hm.requests);
    hm.refused_queue_delay = 7;
    hm.open_connections = 3;
    hm.buffered_bytes = 4096;
    hm.stuck_calls = 1;
    hm.refused_write_budget = h == 0 ? 3 : 0;
    hm.refused_queue_wait = h == 0 ? 0 : 5;
  }
  s.ready = readiness::refusing_work;
  s.parked_bytes = 4096;
  s.budget_bytes = 1 << 20;
  pool.threads = 2;
  pool.calls_submitted = 11;
  pool.workers.resize(2);
  pool.workers[1].calls_run = 5;
  pool.lent.calls_run = 7;  // every lent worker's together
  s.pool = &pool;
  return s;
}

TEST(metrics_exposition, ThePageParsesAndCarriesTheSnapshot) {
  knit::pool_stats pool;
  const std::string text = format_metrics(two_hosts_and_a_pool(pool));
  const auto page = parse_prometheus_text(text);
  ASSERT_TRUE(page.errors.empty()) << joined(page.errors) << text;
  EXPECT_TRUE(histogram_errors(page).empty()) << joined(histogram_errors(page));
  for (const auto& [family, type] : page.types) {
    EXPECT_TRUE(page.helped.count(family)) << family;
    EXPECT_EQ(family.rfind("knit_", 0), 0U) << family;
    if (type == "counter") {
      EXPECT_TRUE(family.ends_with("_total")) << family;
    }
  }
  EXPECT_EQ(page.types.at("knit_http_request_duration_seconds"), "histogram");
  EXPECT_EQ(page.sum("knit_http_requests_total", {{"route", "ping"}, {"code", "200"}}), 3);
  EXPECT_EQ(page.sum("knit_http_requests_total", {{"host", "1"}, {"route", "ping"}}), 2);
  EXPECT_EQ(page.sum("knit_http_requests_total", {{"code", "504"}}), 2);
  EXPECT_EQ(page.sum("knit_http_request_duration_seconds_count", {{"route", "ping"}}), 3);
  EXPECT_EQ(page.sum("knit_http_request_duration_seconds_bucket",
                     {{"host", "0"}, {"route", "ping"}, {"le", "0.00025"}}),
            0);
  EXPECT_EQ(page.sum("knit_http_request_duration_seconds_bucket",
                     {{"host", "0"}, {"route", "ping"}, {"le", "0.0005"}}),
            1);
  EXPECT_EQ(page.sum("knit_http_request_duration_seconds_bucket",
                     {{"host", "1"}, {"route", "ping"}, {"le", "0.000005"}}),
            0);
  EXPECT_EQ(page.sum("knit_http_request_duration_seconds_bucket",
                     {{"host", "1"}, {"route", "ping"}, {"le", "+Inf"}}),
            2);
  EXPECT_DOUBLE_EQ(page.sum("knit_http_request_duration_seconds_sum", {{"route", "ssr"}}), 4.0);
  EXPECT_EQ(page.sum("knit_admission_refusals_total", {{"reason", "queue_delay"}}), 14);
  EXPECT_EQ(page.sum("knit_stuck_calls_total"), 2);
  EXPECT_EQ(page.sum("knit_open_connections", {{"host", "1"}}), 3);
  EXPECT_EQ(page.sum("knit_buffered_bytes"), 8192);
  EXPECT_EQ(page.sum("knit_parked_bytes"), 4096);
  EXPECT_EQ(page.sum("knit_memory_budget_bytes"), 1 << 20);
  EXPECT_EQ(page.sum("knit_admission_refusals_total", {{"reason", "write_budget"}}), 3);
  EXPECT_EQ(page.sum("knit_admission_refusals_total", {{"host", "1"}, {"reason", "queue_wait"}}),
            5);
  EXPECT_EQ(page.sum("knit_ready"), 0);
  EXPECT_EQ(page.sum("knit_draining"), 0);
  EXPECT_EQ(page.sum("knit_pool_threads"), 2);
  EXPECT_EQ(page.sum("knit_pool_calls_submitted_total"), 11);
  EXPECT_EQ(page.sum("knit_pool_worker_calls_run_total", {{"worker", "1"}}), 5);
  EXPECT_EQ(page.sum("knit_pool_worker_calls_run_total", {{"worker", "lent"}}), 7);
  EXPECT_EQ(page.sum("knit_pool_worker_calls_run_total"), 12);  // the seats' and the lent
  EXPECT_TRUE(page.has("knit_pool_worker_sched_failures_total"));
}

TEST(metrics_exposition, OneHostHasNoHostLabelAndNoPoolWithout) {
  metrics_snapshot s;
  request_metrics m(false);
  m.record(route::readyz, 503, 1'000);
  m.add_to(s.hosts.emplace_back().requests);
  s.ready = readiness::draining;
  const std::string text = format_metrics(s);
  const auto page = parse_prometheus_text(text);
  ASSERT_TRUE(page.errors.empty()) << joined(page.errors) << text;
  EXPECT_EQ(text.find("host=\""), std::string::npos) << text;
  EXPECT_EQ(text.find("knit_pool_"), std::string::npos);
  EXPECT_EQ(page.sum("knit_http_requests_total", {{"route", "readyz"}, {"code", "503"}}), 1);
  EXPECT_EQ(page.sum("knit_draining"), 1);
  EXPECT_EQ(kMetricsContentType, "text/plain; version=0.0.4; charset=utf-8");
}

TEST(metrics_exposition, WorkerProcessesOnlyWithProcessIsolation) {
  metrics_snapshot s;
  s.hosts.emplace_back();
  EXPECT_EQ(format_metrics(s).find("knit_worker_process"), std::string::npos);
  s.workers = worker_process_figures{3, 2, 1, 4, 1, 0, 0, 5, 6, 7};
  const std::string text = format_metrics(s);
  const auto page = parse_prometheus_text(text);
  ASSERT_TRUE(page.errors.empty()) << joined(page.errors) << text;
  EXPECT_EQ(page.sum("knit_worker_process_crashes_total"), 3);
  EXPECT_EQ(page.sum("knit_worker_process_respawns_total"), 2);
  EXPECT_EQ(page.sum("knit_worker_process_kills_total"), 1);
  EXPECT_EQ(page.sum("knit_worker_processes"), 4);
  EXPECT_EQ(page.sum("knit_worker_processes_crash_looping"), 1);
  EXPECT_EQ(page.sum("knit_worker_process_sandbox_kills_total"), 0);
  EXPECT_EQ(page.sum("knit_worker_process_memory_kills_total"), 0);
  EXPECT_EQ(page.sum("knit_worker_process_calls_resent_total"), 5);
  EXPECT_EQ(page.sum("knit_worker_process_calls_moved_total"), 6);
  EXPECT_EQ(page.sum("knit_worker_process_protocol_kills_total"), 7);
}

}  // namespace
}  // namespace knit_server

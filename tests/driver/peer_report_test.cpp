// "knit vs the peers" from a hand-made rows.jsonl (bun: inline, pooled 1/2, asio 1/2,
// multi 2, auto 1 and an nginx peer serving /ping only, x 3 repetitions, sat and rate):
// the in-process table (asio, multi) and the external peers' own table.
#include <gtest/gtest.h>

#include <string>

#include "driver/report/configs.hpp"
#include "driver/report/peer_report.hpp"
#include "driver/report/report.hpp"
#include "driver/run/rows.hpp"

namespace knit::bench {
namespace {

std::vector<result_row> fixture() {
  return read_rows_file(std::string(KNIT_DRIVER_FIXTURES) + "/peers_bun.jsonl");
}

std::string section(const std::string& md, const std::string& heading) {
  auto a = md.find(heading);
  if (a == std::string::npos) return "";
  auto b = md.find("\n### ", a + heading.size());
  return md.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

const measured_config& find(const std::vector<measured_config>& cs, const std::string& tag,
                            const std::string& mode) {
  for (const auto& c : cs)
    if (c.tag == tag && c.mode == mode) return c;
  throw std::runtime_error("no config " + tag + " " + mode);
}

const peer_metric& metric(const std::string& name) {
  for (const auto& m : peer_metrics())
    if (m.name == name) return m;
  throw std::runtime_error("no metric " + name);
}

TEST(peer_report, ClassifiesTheModes) {
  auto rows = fixture();
  ASSERT_EQ(rows.size(), 48u);
  auto cs = group_configs(rows);
  EXPECT_EQ(find(cs, "inline", "sat").policy, config_kind::inline_loop);
  EXPECT_EQ(find(cs, "t1", "sat").policy, config_kind::default_policy);
  EXPECT_EQ(find(cs, "a2", "sat").policy, config_kind::asio);
  EXPECT_EQ(find(cs, "m2", "sat").policy, config_kind::multi);
  EXPECT_EQ(find(cs, "auto1", "sat").policy, config_kind::auto_mode);
  EXPECT_EQ(find(cs, "nginx", "sat").policy, config_kind::peer);
  EXPECT_EQ(find(cs, "a2", "sat").label, "asio: 2");
  EXPECT_EQ(find(cs, "m2", "sat").label, "multi: 2");
  EXPECT_EQ(find(cs, "auto1", "sat").label, "auto: 1");
  EXPECT_EQ(find(cs, "nginx", "sat").label, "peer: nginx");
  EXPECT_EQ(find(cs, "nginx", "sat").reps.size(), 3u);
  EXPECT_TRUE(is_peer(config_kind::asio) && is_peer(config_kind::multi) &&
              is_peer(config_kind::peer));
  EXPECT_FALSE(is_peer(config_kind::auto_mode) || is_peer(config_kind::inline_loop) ||
               is_peer(config_kind::default_policy));
  // Route threads pair the comparisons: pooled 1 = loop + 1 worker = multi 2.
  EXPECT_EQ(route_threads(find(cs, "t1", "sat")), route_threads(find(cs, "m2", "sat")));
  EXPECT_EQ(route_threads(find(cs, "a1", "sat")), std::optional<int>(2));
  EXPECT_EQ(route_threads(find(cs, "inline", "sat")), std::optional<int>(1));
  EXPECT_EQ(route_threads(find(cs, "nginx", "sat")), std::nullopt);
  // Only knit's pool sizes are pool sizes (section C): asio and multi are not.
  EXPECT_EQ(pool_sizes(cs, {"bun", std::nullopt, "sat"}), (std::vector<int>{1, 2}));
  EXPECT_EQ(served_note(find(cs, "nginx", "sat")), " (/ping only)");
  EXPECT_EQ(served_note(find(cs, "t1", "sat")), "");
}

TEST(peer_report, PeerRowsKeepNullPoolStats) {
  auto rows = fixture();
  const result_row& nginx = rows[7];
  ASSERT_EQ(nginx.server_mode, "peer:nginx");
  EXPECT_TRUE(nginx.pool_counters.empty());
  EXPECT_EQ(nginx.peer_processes, std::optional<int>(2));
  auto o = row_to_json(nginx);
  EXPECT_TRUE(o.at("pool_counters").is_null());
  EXPECT_TRUE(o.at("pool_per_call").is_null());
  EXPECT_TRUE(o.at("server_requests").is_null());
  EXPECT_EQ(row_from_json(o), nginx);
}

TEST(peer_report, RatiosArePairedByRepetition) {
  const auto rows = fixture();  // configs point into the rows
  auto cs = group_configs(rows);
  // rps 18000/15000, 18600/15000, 17400/15000.
  rep_stat r =
      paired_ratio(find(cs, "t1", "sat"), find(cs, "a1", "sat"), metric("total rps, saturating"));
  ASSERT_EQ(r.n, 3);
  EXPECT_DOUBLE_EQ(r.median, 1.2);
  EXPECT_DOUBLE_EQ(r.min, 17400.0 / 15000);
  EXPECT_DOUBLE_EQ(r.max, 18600.0 / 15000);
  EXPECT_EQ(ratio_cell(r), "1.20× (1.16–1.24)");
  // Lower is better: peer / knit. /ping p99 9 ms (multi 2) against 10, 12, 11 ms.
  rep_stat p =
      paired_ratio(find(cs, "t1", "sat"), find(cs, "m2", "sat"), metric("/ping p99, saturating"));
  EXPECT_DOUBLE_EQ(p.median, 9.0 / 11);
  EXPECT_DOUBLE_EQ(p.min, 9.0 / 12);
  EXPECT_DOUBLE_EQ(p.max, 0.9);
  EXPECT_EQ(ratio_cell(p), "0.82× (0.75–0.90)");
  EXPECT_EQ(ratio_cell(rep_stat{}), "-");
}

TEST(peer_report, AConfigurationThatMissedTheRateIsNotCompared) {
  const auto rows = fixture();
  auto cs = group_configs(rows);
  EXPECT_FALSE(met_rate(find(cs, "a1", "rate")));
  EXPECT_TRUE(met_rate(find(cs, "a2", "rate")));
  EXPECT_TRUE(met_rate(find(cs, "a1", "sat")));  // no rate_met in a saturating row
  // Had it been compared, asio 1 (1.5 cores) would have been the best peer of threads: 1.
  rep_stat with_a1 = paired_ratio(find(cs, "t1", "rate"), find(cs, "a1", "rate"),
                                  metric("server cores, fixed rate"));
  EXPECT_DOUBLE_EQ(with_a1.median, 1.25);
}

TEST(peer_report, FixedRatePingP99IsPairedLikeTheOthers) {
  const auto rows = fixture();
  auto cs = group_configs(rows);
  // Lower is better: multi 2's /ping p99 2.2, 2.4, 2.6 ms against threads: 1's 2.0 ms.
  rep_stat r =
      paired_ratio(find(cs, "t1", "rate"), find(cs, "m2", "rate"), metric("/ping p99, fixed rate"));
  ASSERT_EQ(r.n, 3);
  EXPECT_DOUBLE_EQ(r.median, 1.2);
  EXPECT_DOUBLE_EQ(r.min, 1.1);
  EXPECT_DOUBLE_EQ(r.max, 1.3);
  EXPECT_EQ(metric("/ping p99, fixed rate").mode, "rate");
  EXPECT_FALSE(metric("/ping p99, fixed rate").higher_is_better);
}

TEST(peer_report, SectionShowsEveryKnitRowAgainstItsBestInProcessPeer) {
  const std::string md = render_markdown(fixture(), nullptr, {}, {});
  const std::string s = section(md, "### knit vs the peers");
  ASSERT_FALSE(s.empty()) << md;
  const std::string main = s.substr(0, s.find("#### External peers"));
  for (const char* line : {
           "| knit | total rps, saturating | /ping p99, saturating | /ping p99, fixed rate | "
           "server cores, fixed rate | "
           "CPU-us/req, fixed rate |",
           // Best in-process peer by median: asio 1 on rps, multi 2 on /ping p99 (and it wins
           // there). asio 1 missed the rate in its third fixed-rate window: multi 2 is the
           // fixed-rate peer.
           "| threads: 1 | 1.20× (1.16–1.24) vs asio: 1 | 0.82× (0.75–0.90) vs multi: 2, peer wins "
           "| "
           "1.20× (1.10–1.30) vs multi: 2 | 1.50× (1.38–1.64) vs multi: 2 | 1.50× (1.38–1.64) vs "
           "multi: 2 |",
           // asio 2's third fixed-rate window stayed over the foreign-load limit.
           "| threads: 2 | 1.14× vs asio: 2 | 1.17× vs asio: 2 | 1.50× vs asio: 2 ⚠ | 1.14× vs "
           "asio: 2 ⚠ | "
           "1.14× vs asio: 2 ⚠ |",
           "| auto: 1 | 1.13× vs asio: 1 | 1.20× vs multi: 2 | 1.20× (1.10–1.30) vs multi: 2 | "
           "1.80× vs multi: 2 | "
           "1.80× vs multi: 2 |",
           // The medians behind the fixed-rate /ping p99 column (multi 2: 2.2, 2.4, 2.6 ms).
           "/ping p99 at the fixed rate, medians over repetitions: `threads: 1` 2.00 ms vs `multi: "
           "2` 2.40 ms; "
           "`threads: 2` 2.00 ms vs `asio: 2` 3.00 ms; `auto: 1` 2.00 ms vs `multi: 2` 2.40 ms.",
           "Where an in-process peer wins:\n\n- `threads: 1` on /ping p99, saturating: 0.82× "
           "(0.75–0.90) vs multi: 2\n\n",
       })
    EXPECT_NE(main.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << main;
  // nginx beats inline on saturating /ping p99 (20 ms against 41) and every row on /ping rps,
  // but it is no candidate of the in-process table, so none of its wins is listed there.
  EXPECT_EQ(main.find("vs peer: nginx"), std::string::npos) << main;
  // inline (1 route thread) has no in-process peer with one route thread: no row.
  EXPECT_EQ(main.find("| inline |"), std::string::npos) << main;
  for (const char* line : {
           "did not achieve the offered rate (it did less work, so its cores, CPU and latency "
           "would flatter it): "
           "`asio: 1`.",
           "`peer: nginx` serves /ping only",
           "carry no pool counters (`null`)",
           "⚠ marks a figure or ratio",
       })
    EXPECT_NE(s.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << s;
}

TEST(peer_report, ExternalPeersHaveTheirOwnTableAsAReference) {
  const std::string md = render_markdown(fixture(), nullptr, {}, {});
  const std::string s = section(md, "### knit vs the peers");
  const auto at = s.find("#### External peers: a reference, not a like-for-like peer");
  ASSERT_NE(at, std::string::npos) << s;
  const std::string ext = s.substr(at);
  for (const char* line : {
           "| server | /ping rps, saturating | /ping p99 ms, saturating | /ping p99 ms, fixed rate "
           "| "
           "CPU-us/req, fixed rate |",
           // nginx's own figures on /ping, the one route it served.
           "| peer: nginx (/ping only) | 30000 | 20.00 | 2.00 | 143 |",
           // knit's best row per measure: pooled 1 on /ping rps (5800-6200), auto 1 on p99 (7.5
           // ms), inline first among the 2.00 ms ties at a fixed rate and lowest on CPU (238 us).
           "| knit, best row | `threads: 1`: 6000 (5800–6200) | `auto: 1`: 7.50 | `inline`: 2.00 | "
           "`inline`: 238 |",
       })
    EXPECT_NE(ext.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << ext;
  // The one line above the table: knit's best against nginx, in the main table's direction.
  const std::string summary =
      "External peers, a reference (table below): `peer: nginx` (/ping only) against knit's best "
      "row: "
      "/ping rps, saturating 0.20× (0.19–0.21); /ping p99 ms, saturating 2.67×; /ping p99 ms, "
      "fixed rate 1.00×; "
      "CPU-us/req, fixed rate 0.60× (below 1× the external server is ahead).";
  EXPECT_NE(s.find(summary), std::string::npos) << s;
  EXPECT_LT(s.find(summary), at);
}

TEST(peer_report, TablesAAndBCarryThePeerRows) {
  const std::string md = render_markdown(fixture(), nullptr, {}, {});
  const std::string a = section(md, "### A.");
  for (const char* line : {
           "| auto: 1 | 5667 | 5667 | 5667 | 17000 | +110% |",
           "| asio: 1 | 5000 | 5000 | 5000 | 15000 | +85% |",
           "| multi: 2 | 4000 (3867–4133) | 4000 (3867–4133) | 4000 (3867–4133) | 12000 "
           "(11600–12400) | +48% |",
           // A peer serving /ping only has no "vs inline": not the same work.
           "| peer: nginx (/ping only) | 30000 | - | - | 30000 | - |",
       })
    EXPECT_NE(a.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << a;
  const std::string b = section(md, "### B.");
  for (const char* line : {
           "| threads: 1 | 0.50 | 2.00 | 1.20 (1.10–1.30) | 0.050 | 286 (262–310) |",
           "| asio: 2 ⚠ | 0.50 | 2.00 | 1.60 | 0.002 | 381 |",
           "| peer: nginx (/ping only) | 0.50 | 2.00 | 0.20 | 0.002 | 143 |",
       })
    EXPECT_NE(b.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << b;
  // nginx has no /ssr table row.
  const std::string ssr = b.substr(b.find("**/ssr**"));
  EXPECT_EQ(ssr.find("peer: nginx"), std::string::npos);
  // Section C lists knit's pool only.
  const std::string c = section(md, "### C.");
  EXPECT_EQ(c.find("asio"), std::string::npos) << c;
}

TEST(peer_report, NoPeerSectionWithoutPeers) {
  auto rows = fixture();
  std::vector<result_row> knit_only;
  for (const auto& r : rows)
    if (r.server_mode == "inline" || r.server_mode == "pooled") knit_only.push_back(r);
  EXPECT_EQ(render_markdown(knit_only, nullptr, {}, {}).find("knit vs the peers"),
            std::string::npos);
}

}  // namespace
}  // namespace knit::bench

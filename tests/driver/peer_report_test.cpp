// "knit vs the peers" from a hand-made rows.jsonl (bun: inline, pooled 1/2, asio 1/2,
// multi 2, auto 1 and an nginx peer serving /ping only, x 3 repetitions, sat and rate).
#include <gtest/gtest.h>

#include <string>

#include "driver/configs.hpp"
#include "driver/peer_report.hpp"
#include "driver/report.hpp"
#include "driver/rows.hpp"

namespace knit::bench {
namespace {

std::vector<Row> fixture() { return read_rows_file(std::string(KNIT_DRIVER_FIXTURES) + "/peers_bun.jsonl"); }

std::string section(const std::string& md, const std::string& heading) {
  auto a = md.find(heading);
  if (a == std::string::npos) return "";
  auto b = md.find("\n### ", a + heading.size());
  return md.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

const Config& find(const std::vector<Config>& cs, const std::string& tag, const std::string& mode) {
  for (const auto& c : cs)
    if (c.tag == tag && c.mode == mode) return c;
  throw std::runtime_error("no config " + tag + " " + mode);
}

const PeerMetric& metric(const std::string& name) {
  for (const auto& m : peer_metrics())
    if (m.name == name) return m;
  throw std::runtime_error("no metric " + name);
}

TEST(PeerReport, ClassifiesTheModes) {
  auto rows = fixture();
  ASSERT_EQ(rows.size(), 48u);
  auto cs = group_configs(rows);
  EXPECT_EQ(find(cs, "inline", "sat").policy, Policy::Inline);
  EXPECT_EQ(find(cs, "t1", "sat").policy, Policy::SeedPolicy);
  EXPECT_EQ(find(cs, "a2", "sat").policy, Policy::Asio);
  EXPECT_EQ(find(cs, "m2", "sat").policy, Policy::Multi);
  EXPECT_EQ(find(cs, "auto1", "sat").policy, Policy::Auto);
  EXPECT_EQ(find(cs, "nginx", "sat").policy, Policy::Peer);
  EXPECT_EQ(find(cs, "a2", "sat").label, "asio: 2");
  EXPECT_EQ(find(cs, "m2", "sat").label, "multi: 2");
  EXPECT_EQ(find(cs, "auto1", "sat").label, "auto: 1");
  EXPECT_EQ(find(cs, "nginx", "sat").label, "peer: nginx");
  EXPECT_EQ(find(cs, "nginx", "sat").reps.size(), 3u);
  EXPECT_TRUE(is_peer(Policy::Asio) && is_peer(Policy::Multi) && is_peer(Policy::Peer));
  EXPECT_FALSE(is_peer(Policy::Auto) || is_peer(Policy::Inline) || is_peer(Policy::SeedPolicy));
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

TEST(PeerReport, PeerRowsKeepNullPoolStats) {
  auto rows = fixture();
  const Row& nginx = rows[7];
  ASSERT_EQ(nginx.server_mode, "peer:nginx");
  EXPECT_TRUE(nginx.pool_counters.empty());
  EXPECT_EQ(nginx.peer_processes, std::optional<int>(2));
  auto o = row_to_json(nginx);
  EXPECT_TRUE(o.at("pool_counters").is_null());
  EXPECT_TRUE(o.at("pool_per_call").is_null());
  EXPECT_TRUE(o.at("server_requests").is_null());
  EXPECT_EQ(row_from_json(o), nginx);
}

TEST(PeerReport, RatiosArePairedByRepetition) {
  const auto rows = fixture();  // configs point into the rows
  auto cs = group_configs(rows);
  // rps 18000/15000, 18600/15000, 17400/15000.
  Stat r = paired_ratio(find(cs, "t1", "sat"), find(cs, "a1", "sat"), metric("total rps, saturating"));
  ASSERT_EQ(r.n, 3);
  EXPECT_DOUBLE_EQ(r.median, 1.2);
  EXPECT_DOUBLE_EQ(r.min, 17400.0 / 15000);
  EXPECT_DOUBLE_EQ(r.max, 18600.0 / 15000);
  EXPECT_EQ(ratio_cell(r), "1.20× (1.16–1.24)");
  // Lower is better: peer / knit. /ping p99 9 ms (multi 2) against 10, 12, 11 ms.
  Stat p = paired_ratio(find(cs, "t1", "sat"), find(cs, "m2", "sat"), metric("/ping p99, saturating"));
  EXPECT_DOUBLE_EQ(p.median, 9.0 / 11);
  EXPECT_DOUBLE_EQ(p.min, 9.0 / 12);
  EXPECT_DOUBLE_EQ(p.max, 0.9);
  EXPECT_EQ(ratio_cell(p), "0.82× (0.75–0.90)");
  EXPECT_EQ(ratio_cell(Stat{}), "-");
}

TEST(PeerReport, AConfigurationThatMissedTheRateIsNotCompared) {
  const auto rows = fixture();
  auto cs = group_configs(rows);
  EXPECT_FALSE(met_rate(find(cs, "a1", "rate")));
  EXPECT_TRUE(met_rate(find(cs, "a2", "rate")));
  EXPECT_TRUE(met_rate(find(cs, "a1", "sat")));  // no rate_met in a saturating row
  // Had it been compared, asio 1 (1.5 cores) would have been the best peer of threads: 1.
  Stat with_a1 = paired_ratio(find(cs, "t1", "rate"), find(cs, "a1", "rate"), metric("server cores, fixed rate"));
  EXPECT_DOUBLE_EQ(with_a1.median, 1.25);
}

TEST(PeerReport, SectionShowsEveryKnitRowAgainstItsBestPeer) {
  const std::string md = render_markdown(fixture(), nullptr, {}, {});
  const std::string s = section(md, "### knit vs the peers");
  ASSERT_FALSE(s.empty()) << md;
  for (const char* line : {
           "| knit | total rps, saturating | /ping p99, saturating | server cores, fixed rate | CPU-us/req, fixed rate |",
           // nginx served /ping only: compared on /ping p99 alone, where it wins over inline.
           "| inline | - | 0.49× (0.48–0.50) vs peer: nginx (/ping only), peer wins | - | - |",
           // Best peer by median: asio 1 on rps and cores, multi 2 on /ping p99 (and it wins there).
           // asio 1 missed the rate in its third fixed-rate window: multi 2 is the fixed-rate peer.
           "| threads: 1 | 1.20× (1.16–1.24) vs asio: 1 | 0.82× (0.75–0.90) vs multi: 2, peer wins | "
           "1.50× (1.38–1.64) vs multi: 2 | 1.50× (1.38–1.64) vs multi: 2 |",
           // asio 2's third fixed-rate window stayed over the foreign-load limit.
           "| threads: 2 | 1.14× vs asio: 2 | 1.17× vs asio: 2 | 1.14× vs asio: 2 ⚠ | 1.14× vs asio: 2 ⚠ |",
           "| auto: 1 | 1.13× vs asio: 1 | 1.20× vs multi: 2 | 1.80× vs multi: 2 | 1.80× vs multi: 2 |",
           "did not achieve the offered rate (it did less work, so its cores and CPU would flatter it): `asio: 1`.",
           "- `threads: 1` on /ping p99, saturating: 0.82× (0.75–0.90) vs multi: 2",
           "`peer: nginx` serves /ping only",
           "carry no pool counters (`null`)",
           "⚠ marks a ratio",
       })
    EXPECT_NE(s.find(line), std::string::npos) << "missing: " << line << "\nin:\n" << s;
}

TEST(PeerReport, TablesAAndBCarryThePeerRows) {
  const std::string md = render_markdown(fixture(), nullptr, {}, {});
  const std::string a = section(md, "### A.");
  for (const char* line : {
           "| auto: 1 | 5667 | 5667 | 5667 | 17000 | +110% |",
           "| asio: 1 | 5000 | 5000 | 5000 | 15000 | +85% |",
           "| multi: 2 | 4000 (3867–4133) | 4000 (3867–4133) | 4000 (3867–4133) | 12000 (11600–12400) | +48% |",
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

TEST(PeerReport, NoPeerSectionWithoutPeers) {
  auto rows = fixture();
  std::vector<Row> knit_only;
  for (const auto& r : rows)
    if (r.server_mode == "inline" || r.server_mode == "pooled") knit_only.push_back(r);
  EXPECT_EQ(render_markdown(knit_only, nullptr, {}, {}).find("knit vs the peers"), std::string::npos);
}

}  // namespace
}  // namespace knit::bench

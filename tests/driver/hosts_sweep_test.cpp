// The hosts sweep: its report section from hand-made rows (figures and paired ratios to
// inline at H and asio at H, W), and the shrunken grid run end to end against the fakes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "driver/report/charts.hpp"
#include "driver/report/report.hpp"
#include "driver/run/builtin_plans.hpp"
#include "driver/run/rows.hpp"
#include "driver/run/runner.hpp"
#include "driver/system/spawn.hpp"
#include "fake_sandbox.hpp"

namespace knit::bench {
namespace {

namespace fs = std::filesystem;

// One saturating row: heavy = /ssr + /jwt split evenly.
result_row sweep_row(const std::string& tag, const std::string& server_mode, int hosts, int threads,
                     int rep, double heavy, double ping_p99, long long cpu_us, double idle) {
  result_row r;
  r.tag = tag;
  r.mode = "sat";
  r.server_mode = server_mode;
  r.threads = threads;
  r.hosts = hosts;
  r.cost_profile = "bun";
  r.rep = rep;
  r.idle_cores = idle;
  r.cores = 1.5;
  r.cpu_us_per_req = cpu_us;
  r.gen_cores = 0.2;
  r.routes["ping"].rps = 5000;
  r.routes["ping"].p99 = ping_p99;
  r.routes["ssr"].rps = heavy / 2;
  r.routes["jwt"].rps = heavy / 2;
  r.total_rps = static_cast<long long>(5000 + heavy);
  r.cpu_layout = boost::json::object{{"server_cpus", "0-7"}, {"gen_cpus", "8-15"}};
  return r;
}

// H in {1, 2} x W = 1, two repetitions; knit's figures move between them so the spread shows.
std::vector<result_row> sweep_rows() {
  std::vector<result_row> rows;
  for (int rep = 0; rep < 2; ++rep) {
    const double k = rep == 0 ? 1.0 : 1.2;
    rows.push_back(sweep_row("h1-inline", "inline", 1, 0, rep, 1000, 10, 150, 0));
    rows.push_back(sweep_row("h1-t1", "pooled", 1, 1, rep, 1800 * k, 4, 110, 0.001));
    rows.push_back(sweep_row("h1-a1", "asio", 1, 1, rep, 2000, 5, 120, 0.002));
    rows.push_back(sweep_row("h2-inline", "inline", 2, 0, rep, 1000, 10, 150, 0));
    rows.push_back(sweep_row("h2-t1", "pooled", 2, 1, rep, 2000 * k, 4, 100, 0));
    rows.push_back(sweep_row("h2-a1", "asio", 2, 1, rep, 2500, 5, 120, 0.004));
  }
  return rows;
}

std::string section(const std::string& md, const std::string& heading) {
  auto a = md.find(heading);
  if (a == std::string::npos) return "";
  auto b = md.find("\n## ", a + heading.size());
  return md.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

TEST(hosts_report, the_sweep_section_shows_each_point_and_its_ratios_to_the_peers) {
  const auto rows = sweep_rows();
  const std::string md = render_markdown(rows, nullptr, {}, {});
  const std::string s = section(md, "## Many event loops (cost profile bun)");
  ASSERT_FALSE(s.empty()) << md;
  EXPECT_NE(s.find("### Saturating"), std::string::npos) << s;
  // Figures: hosts, workers, configuration, heavy rps, /ping p99, CPU-us/req, idle, cores, gen.
  EXPECT_NE(s.find("| 2 | - | inline, hosts: 2 | 1000 | 10.00 | 150 | 0.000 | 1.50 | 0.20 |"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("| 2 | 1 | threads: 1, hosts: 2 | 2200 (2000–2400) | 4.00 | 100 |"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("| 2 | 1 | asio: 1, hosts: 2 | 2500 |"), std::string::npos) << s;
  // Ratios, paired by repetition: heavy 2000/1000 and 2400/1000 vs inline; /ping p99 10/4;
  // heavy 2000/2500 and 2400/2500 vs asio; p99 5/4; CPU 120/100.
  EXPECT_NE(s.find("| threads: 1, hosts: 2 | 2.20× (2.00–2.40) | 2.50× | 0.88× (0.80–0.96) | "
                   "1.25× | 1.20× |"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("| threads: 1 | 1.98× (1.80–2.16) | 2.50× | 0.99× (0.90–1.08) | 1.25× | "
                   "1.09× |"),
            std::string::npos)
      << s;
  // One goal missed: heavy throughput under 0.9x asio's at two hosts.
  EXPECT_NE(s.find("- `threads: 1, hosts: 2` heavy rps vs `asio: 1, hosts: 2`: 0.88× "
                   "(0.80–0.96) (goal 0.9×)"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("- `threads: 1` heavy rps"), std::string::npos) << s;
  // The one-host tables keep to one host; the hosts section is the only place H = 2 shows.
  const std::string one_host = section(md, "## Cost profile: bun");
  EXPECT_NE(one_host.find("| asio: 1 |"), std::string::npos) << one_host;
  EXPECT_EQ(one_host.find("hosts: 2"), std::string::npos) << one_host;
}

TEST(hosts_report, the_sweep_chart_is_drawn_and_placed_in_its_section) {
  if (find_in_path("gnuplot").empty()) GTEST_SKIP() << "gnuplot not installed";
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("knit-bench-hosts-charts-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ::unsetenv("KNIT_BENCH_GNUPLOT");
  const auto rows = sweep_rows();
  chart_set charts = render_charts(group_configs(rows), dir.string());
  EXPECT_TRUE(charts.warnings.empty()) << charts.warnings.front();
  EXPECT_TRUE(fs::exists(dir / "charts/hosts_bun.png"));
  const std::string md = render_markdown(rows, nullptr, charts.charts, {});
  EXPECT_NE(section(md, "## Many event loops").find("](charts/hosts_bun.png)"), std::string::npos)
      << md;
  fs::remove_all(dir);
}

TEST(hosts_report, no_section_for_rows_of_one_host_and_a_warning_for_a_server_that_ignored_it) {
  std::vector<result_row> one = {sweep_row("i", "inline", 1, 0, 0, 1000, 10, 150, 0)};
  EXPECT_EQ(render_markdown(one, nullptr, {}, {}).find("Many event loops"), std::string::npos);
  result_row ignored = sweep_row("h4-t1", "pooled", 4, 1, 0, 1000, 4, 100, 0);
  ignored.reported_mode = "pooled";  // knit-stats came, with no hosts list
  const std::string md = render_markdown({ignored}, nullptr, {}, {});
  EXPECT_NE(md.find("> Warning: the server ran another number of hosts"), std::string::npos) << md;
  EXPECT_NE(md.find("`h4-t1` sat asked for 4, knit-stats listed 1"), std::string::npos) << md;
}

// The shrunken grid (bench/plans/hosts-sweep-small.json) through knit-bench run against the
// fake server and load, with the plan's layout and tiny windows: every point measured, each
// row records its hosts, the server saw KNIT_HOSTS, and the report has the sweep section.
TEST(hosts_sweep_end_to_end, the_small_grid_runs_against_the_fakes) {
  if (::sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "needs 2 CPUs for its own layout";
  fakes::sandbox box;
  run_options cfg = box.config();
  builtin_plan plan = load_builtin_plan("hosts-sweep-small");
  cfg.cases = plan.cases;
  cfg.repeat = plan.repeat;
  cfg.separate_cpus = plan.separate_cpus;
  cfg.plan_name = plan.name;
  // Overlapping CPU sets are refused before anything starts.
  cfg.server_cpus = {0, 1};
  cfg.gen_cpus = {1};
  EXPECT_EQ(run_benchmark(cfg), 2);
  EXPECT_FALSE(fs::exists(fs::path(cfg.out_dir) / "rows.jsonl"));
  cfg.server_cpus = {0};
  cfg.gen_cpus = {1};
  ASSERT_EQ(run_benchmark(cfg), 0);

  auto rows = read_rows_file((fs::path(cfg.out_dir) / "rows.jsonl").string());
  ASSERT_EQ(rows.size(), plan.cases.size() * static_cast<size_t>(plan.repeat));
  for (const result_row& r : rows) {
    if (r.hosts > 1) EXPECT_EQ(r.server_env.at("KNIT_HOSTS"), std::to_string(r.hosts)) << r.tag;
    else EXPECT_EQ(r.server_env.count("KNIT_HOSTS"), 0u) << r.tag;
    EXPECT_EQ(r.reported_hosts, r.hosts > 1 ? std::optional<int>(r.hosts) : std::nullopt);
    EXPECT_EQ(std::string(r.cpu_layout.at("server_cpus").as_string()), "0");
    EXPECT_EQ(std::string(r.cpu_layout.at("gen_cpus").as_string()), "1");
  }
  EXPECT_EQ(rows[4].tag, "h2-t1");
  EXPECT_EQ(rows[4].hosts, 2);
  const std::string md = fakes::slurp(fs::path(cfg.out_dir) / "report.md");
  EXPECT_NE(md.find("## Many event loops (cost profile bun)"), std::string::npos) << md;
  EXPECT_NE(md.find("| threads: 1, hosts: 2 |"), std::string::npos) << md;
  EXPECT_EQ(md.find("another number of hosts"), std::string::npos) << md;
}

}  // namespace
}  // namespace knit::bench

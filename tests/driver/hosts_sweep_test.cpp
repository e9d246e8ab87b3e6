// The hosts sweep's shrunken grid run end to end against the fakes (its report section from
// hand-made rows is tested in report_test.py).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "driver/run/builtin_plans.hpp"
#include "driver/run/rows.hpp"
#include "driver/run/runner.hpp"
#include "fake_sandbox.hpp"

namespace knit::bench {
namespace {

namespace fs = std::filesystem;

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

// report_python.hpp: which python3 renders the report (PATH's, or the system's when only that
// one has matplotlib).
#include "driver/report/report_python.hpp"

#include "driver/system/spawn.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace knit::bench {
namespace {

const std::vector<std::string> kBoth = {"/root/.pyenv/shims/python3", "/usr/bin/python3"};

TEST(report_python, paths_python3_when_it_has_matplotlib) {
  std::vector<std::string> asked;
  const auto has = [&](const std::string& p) { return asked.push_back(p), true; };
  EXPECT_EQ(choose_report_python(kBoth, true, has), kBoth[0]);
  EXPECT_EQ(asked, (std::vector<std::string>{kBoth[0]}));  // the system's is not asked
}

TEST(report_python, falls_back_to_the_system_python3_when_only_it_has_matplotlib) {
  const auto only_system = [](const std::string& p) { return p == "/usr/bin/python3"; };
  EXPECT_EQ(choose_report_python(kBoth, true, only_system), "/usr/bin/python3");
}

TEST(report_python, keeps_paths_python3_when_neither_has_matplotlib) {
  // report.py then says "charts skipped", as before.
  EXPECT_EQ(choose_report_python(kBoth, true, [](const std::string&) { return false; }), kBoth[0]);
}

TEST(report_python, without_charts_matplotlib_is_not_asked_about) {
  int asked = 0;
  const auto has = [&](const std::string&) { return ++asked, false; };
  EXPECT_EQ(choose_report_python(kBoth, false, has), kBoth[0]);
  EXPECT_EQ(asked, 0);
}

TEST(report_python, no_candidate_is_no_python) {
  EXPECT_EQ(choose_report_python({}, true, [](const std::string&) { return true; }), "");
}

TEST(report_python, on_this_machine_the_choice_draws_charts_whenever_the_system_python3_can) {
  // The case it is for: PATH's python3 (pyenv's, say) without matplotlib, the system's with.
  const auto imports = [](const std::string& p) {
    return capture_output({p, "-c", "import matplotlib"}).has_value();
  };
  const std::string python = report_python(true);
  if (python.empty()) GTEST_SKIP() << "no python3 on PATH nor /usr/bin/python3";
  if (!find_in_path("/usr/bin/python3").empty() && imports("/usr/bin/python3")) {
    EXPECT_TRUE(imports(python)) << python;
  }
  EXPECT_FALSE(find_in_path(python).empty()) << python;  // an executable file
}

}  // namespace
}  // namespace knit::bench

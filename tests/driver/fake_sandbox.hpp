// The fakes of tests/driver (fake_server.cpp, fake_load.cpp) copied into a private directory
// under the names of the real binaries, and a run_options that runs a small plan against
// them in about a second per case: what the end-to-end tests share.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "driver/run/plan.hpp"
#include "driver/run/run_options.hpp"
#include "driver/system/port.hpp"

namespace knit::bench::fakes {

namespace fs = std::filesystem;

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A private copy of the fakes, named like the real binaries: the stray-process check
// looks for running copies of *these* paths, so parallel tests do not trip it.
struct sandbox {
  fs::path dir;
  sandbox() {
    dir = fs::path(::testing::TempDir()) /
          ("knit-bench-e2e-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir / "bin");
    fs::copy_file(KNIT_FAKE_SERVER, dir / "bin/knit-server");
    fs::copy_file(KNIT_FAKE_LOAD, dir / "bin/knit-load");
  }
  ~sandbox() { fs::remove_all(dir); }
  run_options config() const {
    run_options cfg;
    cfg.plan_name = "test";
    cfg.cases = parse_plan(R"([
      {"tag":"inline","mode":"sat","server_mode":"inline","cost_profile":"bun"},
      {"tag":"t2","mode":"sat","threads":2,"cost_profile":"bun"},
      {"tag":"t2old","mode":"sat","threads":2,"spin":"100","park":"1","cost_profile":"bun"},
      {"tag":"inline","mode":"rate","server_mode":"inline","cost_profile":"bun"},
      {"tag":"t2","mode":"rate","threads":2,"cost_profile":"bun"}
    ])");
    cfg.idle_s = 0.2;
    cfg.warmup_s = 0.1;
    cfg.window_s = 0.3;
    cfg.repeat = 2;
    cfg.out_dir = (dir / "out").string();
    cfg.server_exe = (dir / "bin/knit-server").string();
    cfg.load_exe = (dir / "bin/knit-load").string();
    cfg.port = pick_free_port();
    cfg.lock_path = (dir / "lock").string();
    cfg.charts = false;
    cfg.command_line = {"knit-bench", "run", "--plan", "test.json"};
    // Other jobs share this machine: a limit no window reaches keeps reruns and flags (whose
    // pure parts foreign_load_test.cpp covers) out of what this test sees.
    cfg.foreign_max = 1e9;
    return cfg;
  }
};

}  // namespace knit::bench::fakes

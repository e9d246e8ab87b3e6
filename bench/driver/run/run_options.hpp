// The options of one knit-bench run, filled by main from the command line and the plan
// and passed whole to the runner, which measures every case with them.
#pragma once

#include <string>
#include <vector>

#include "driver/run/plan.hpp"

namespace knit::bench {

// The sizing (idle_s, warmup_s, window_s, repeat, conns) is a base, so a built-in plan's
// is taken over whole.
struct run_options : plan_sizing {
  std::string plan_name = "custom";
  std::vector<plan_case> cases;
  double rate_fraction = 0.7;  // rate cases offer this share of the inline sat total
  std::string out_dir;
  std::string server_exe, load_exe;
  std::vector<std::string> server_args;  // extra argv for the server (fakes in tests)
  std::vector<int> server_cpus, gen_cpus;
  std::string host = "127.0.0.1";
  int port = 3000;
  int gen_threads = 0;  // knit-load --threads; 0 = one per generator CPU, or its default
  std::vector<std::string> command_line;
  bool append = false;
  std::string lock_path = "/tmp/knit-bench.lock";
  double ready_timeout_s = 20, stop_grace_s = 5;
  double peer_ready_timeout_s = 10;  // an external peer must accept connections within this
  // The script that runs a fleet case (plan_case::fleet): deploy/fleet.sh of this source tree
  // unless --fleet-script says otherwise.
  std::string fleet_script;
  bool charts = true;
  // Trustworthy windows on a shared machine: a window during which the machine spent more
  // than foreign_max cores outside the server, the generator and the driver is measured
  // again, up to foreign_retries times; the quietest attempt is kept, and flagged in its
  // row and the report when even that one is over the limit.
  double foreign_max = 0.1;
  int foreign_retries = 2;
};

}  // namespace knit::bench

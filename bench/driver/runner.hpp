// Runs a plan: for every case and repetition, start a server, measure idle CPU,
// warm up, measure a window, stop it; append one row per case and render the report.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "driver/cpu_sampler.hpp"
#include "driver/load_run.hpp"
#include "driver/plan.hpp"
#include "driver/rows.hpp"
#include "driver/server_stats.hpp"

namespace knit::bench {

struct RunConfig {
  std::string plan_name = "custom";
  std::vector<Case> cases;
  double idle_s = 2, warmup_s = 2, window_s = 5;
  int repeat = 1;
  int conns = 50;              // per route, unless the case sets its own
  double rate_fraction = 0.7;  // rate cases offer this share of the inline sat total
  std::string out_dir;
  std::string server_exe, load_exe;
  std::vector<std::string> server_args;  // extra argv for the server (fakes in tests)
  std::vector<int> server_cpus, gen_cpus;
  std::string host = "127.0.0.1";
  int port = 3000;
  int gen_threads = 0;         // knit-load --threads; 0 = one per generator CPU, or its default
  std::vector<std::string> command_line;
  bool append = false;
  std::string lock_path = "/tmp/knit-bench.lock";
  double ready_timeout_s = 20, stop_grace_s = 5;
  double peer_ready_timeout_s = 10;  // an external peer must accept connections within this
  bool charts = true;
  // Trustworthy windows on a shared machine: a window during which the machine spent more
  // than foreign_max cores outside the server, the generator and the driver is measured
  // again, up to foreign_retries times; the quietest attempt is kept, and flagged in its
  // row and the report when even that one is over the limit.
  double foreign_max = 0.1;
  int foreign_retries = 2;
};

// Everything measured for one case, before it is rounded into a row.
struct CaseMeasurement {
  CpuDelta idle;
  CpuDelta window;
  double window_s = 0;         // nominal window (CPU is divided by it, as drive.py did)
  LoadResult load;
  int os_threads = 0;
  std::optional<ServerStats> stats_before, stats_after;
  std::map<std::string, std::string> server_env;
  std::vector<std::string> load_cmd;
  long long server_pid = 0;
  double rate_per_route = 0;   // rate mode
  int conns = 0;
  std::vector<std::string> notes;  // things worth a line on stderr (no stats reply, unclean exit)
  std::optional<double> foreign_cores;  // machine busy CPU outside the measured processes, cores
  std::optional<double> steal_cores;    // hypervisor steal over the window, cores
  int foreign_reruns = 0;               // windows measured again before this one was kept
  // External peers: the command as run, and how many processes its tree had at the end.
  std::string peer_command;
  int processes = 0;
};

// What to do with a window given its foreign load (CaseMeasurement::foreign_cores) and how
// many reruns this case has had: keep it (no reading, or at most max_cores), measure it
// again (reruns left), or keep it flagged.
enum class ForeignVerdict { keep, rerun, flag };
ForeignVerdict foreign_verdict(std::optional<double> foreign_cores, int reruns_done, double max_cores, int max_reruns);

// Pure: the row for a case, rounded as the seed's drive.py rounds (idle_cores 3
// decimals, cores 2, rps_per_core / cpu_us_per_req / total_rps integers, route values 2).
// For an external peer, rps counts successful responses only (rps x success rate), so a
// peer answering 404 to a route it lacks adds nothing to its throughput.
Row build_row(const Case& c, int rep, const CaseMeasurement& m, const RunConfig& cfg);

// The whole run. Returns the process exit code: 0 all cases measured, 1 some failed,
// 2 bad setup (missing binaries, out dir in use), 3 another driver or stray processes.
int run_benchmark(const RunConfig& cfg);

// "mm:ss"
std::string clock_text(double seconds);

}  // namespace knit::bench

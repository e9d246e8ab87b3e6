// Measures one case: starts knit-server or an external peer, samples its idle CPU, warms
// it up, measures a window under load, reads its counters and stops it; again when the
// machine was busy elsewhere.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "driver/run/load_run.hpp"
#include "driver/run/plan.hpp"
#include "driver/run/run_options.hpp"
#include "driver/run/server_stats.hpp"
#include "driver/system/cpu_sampler.hpp"

namespace knit::bench {

// Everything measured for one case, before it is rounded into a row.
struct case_measurement {
  cpu_usage idle;
  cpu_usage window;
  double window_s = 0;  // nominal window (CPU is divided by it, as drive.py did)
  load_result load;
  int os_threads = 0;
  std::optional<server_stats> stats_before, stats_after;
  std::map<std::string, std::string> server_env;
  std::vector<std::string> load_cmd;
  long long server_pid = 0;
  double rate_per_route = 0;  // rate mode
  int conns = 0;
  std::vector<std::string> notes;  // things worth a line on stderr (no stats reply, unclean exit)
  std::optional<double> foreign_cores;  // machine busy CPU outside the measured processes, cores
  std::optional<double> steal_cores;    // hypervisor steal over the window, cores
  // System calls the server's process tree made over the window (perf; absent without it).
  std::optional<std::uint64_t> syscalls;
  int foreign_reruns = 0;  // windows measured again before this one was kept
  // External peers: the command as run, and how many processes its tree had at the end.
  std::string peer_command;
  int processes = 0;
};

// What to do with a window given its foreign load (case_measurement::foreign_cores) and how
// many reruns this case has had: keep it (no reading, or at most max_cores), measure it
// again (reruns left), or keep it flagged.
enum class foreign_load_verdict { keep, rerun, flag };
foreign_load_verdict foreign_verdict(std::optional<double> foreign_cores, int reruns_done,
                                     double max_cores, int max_reruns);

// One case, start to stop, measured again up to opts.foreign_retries times while the
// machine was busy elsewhere (foreign_verdict); the quietest attempt is kept. Files go to
// logs/STEM.*; bodies holds the request bodies. Throws case_error or fatal_error.
case_measurement measure_quietest(const plan_case& c, const run_options& cfg,
                                  const std::filesystem::path& logs, const std::string& stem,
                                  const std::filesystem::path& bodies, double rate_per_route);

}  // namespace knit::bench

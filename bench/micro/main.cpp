// knit-micro: runs every micro-benchmark in one process (so results compare as ratios),
// prints the machine layout first and, last, the peer table (peer_table.hpp): knit's figure
// beside each peer's from this same run. Flags are Google Benchmark's.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "bench_support.hpp"
#include "knit/process.hpp"
#include "peer_table.hpp"

int main(int argc, char** argv) {
  // process_benchmarks.cpp's task; knit-micro is its own process worker (re-executed by
  // knit, a child serves in worker_main and never returns here).
  knit::register_process_task("echo", [](std::string_view in) { return std::string(in); });
  if (knit::worker_main(argc, argv)) return 0;
  const auto l = knit_bench::layout();
  std::printf(
      "knit-micro: host thread on CPU %d, worker thread(s) on CPU %d where pinned; %ld CPUs "
      "online\n",
      l.host, l.worker, ::sysconf(_SC_NPROCESSORS_ONLN));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  knit_bench::peer_table_reporter reporter(::isatty(STDOUT_FILENO)
                                               ? benchmark::ConsoleReporter::OO_ColorTabular
                                               : benchmark::ConsoleReporter::OO_Tabular);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  if (!reporter.rows().empty()) {
    std::printf("\nPeers, same run, same pinning (host CPU %d, one worker on CPU %d):\n\n%s",
                l.host, l.worker, knit_bench::render_peer_table(reporter.rows()).c_str());
  }
  return 0;
}

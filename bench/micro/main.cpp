// knit-micro: runs every micro-benchmark in one process (so results compare as ratios) and
// prints the machine layout first. Flags are Google Benchmark's.
#include <benchmark/benchmark.h>

#include <cstdio>

#include "bench_support.hpp"

int main(int argc, char** argv) {
  const auto l = knit_bench::layout();
  std::printf("knit-micro: host thread on CPU %d, worker thread(s) on CPU %d where pinned; %ld CPUs online\n", l.host,
              l.worker, ::sysconf(_SC_NPROCESSORS_ONLN));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

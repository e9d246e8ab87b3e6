// The table knit-micro prints after its run: for each peer metric (peer_benchmarks.cpp),
// knit's figure, each peer's, and knit's ratio to the best peer. A console reporter that
// records the peer/<metric>/<runtime> runs as they are reported, so the table is built
// from exactly the figures printed above it.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

namespace knit_bench {

// One runtime's figures for one metric, one per repetition.
struct peer_figures {
  std::string runtime;
  std::vector<double> values;
  double median() const;
};

// One metric's figures per runtime, in the order the runtimes were first seen.
struct peer_metric_row {
  std::string metric;
  std::vector<peer_figures> figures;
};

// How a metric reads: which counter holds its figure, its unit, and which way is better.
struct peer_metric_spec {
  const char* metric;
  const char* counter;
  const char* unit;
  bool higher_is_better;
  // Figures below this are measurement noise (0: none): when knit and the best peer are
  // both below it the metric is a tie, not a ratio of two noise readings.
  double noise_floor = 0;
  // The counter is multiplied by this before it is shown and compared (cores -> millicores).
  double scale = 1;
};

const std::vector<peer_metric_spec>& peer_metric_specs();

// "how many times better knit is than the best peer", medians against medians: > 1 means
// knit wins; 1 when both are under the spec's noise floor; 0 when knit or every peer
// lacks a figure.
double knit_ratio_to_best_peer(const peer_metric_row& row, const peer_metric_spec& spec);

// The table as text (markdown), from rows collected by peer_table_reporter.
std::string render_peer_table(const std::vector<peer_metric_row>& rows);

class peer_table_reporter : public benchmark::ConsoleReporter {
 public:
  explicit peer_table_reporter(OutputOptions options) : ConsoleReporter(options) {}
  void ReportRuns(const std::vector<Run>& runs) override;
  const std::vector<peer_metric_row>& rows() const { return rows_; }

 private:
  std::vector<peer_metric_row> rows_;
};

}  // namespace knit_bench

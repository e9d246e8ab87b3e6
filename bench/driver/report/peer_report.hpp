// The report's "knit vs the peers": for each knit configuration (inline, the default policy
// at N workers, auto at N), its ratio to the best in-process peer (asio, multi) with as
// many route threads, on throughput, /ping tail latency (saturating and at a fixed rate),
// cores and CPU per request. External servers (nginx) get a table of their own, next to
// knit's best row: a reference for what the machine allows, not a like-for-like peer.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "driver/report/configs.hpp"

namespace knit::bench {

// Threads that run routes: the event loops plus workers (inline H, pooled / auto / asio
// N+H, multi N; H = hosts, 1 unless set). nullopt for an external peer, whose threads knit
// does not set.
std::optional<int> route_threads(const measured_config& c);

// False when any repetition missed the offered rate on any route (rate_met false).
bool met_rate(const measured_config& c);

// " (/ping only)" for a configuration loaded on some routes only, else "".
std::string served_note(const measured_config& c);

// One measure of the comparison.
struct peer_metric {
  std::string name;       // column heading, e.g. "total rps, saturating"
  std::string mode;       // "sat" or "rate"
  bool higher_is_better;  // rps: yes; latency, cores, CPU per request: no
  bool needs_all_routes;  // totals and CPU are the same work only when all three routes ran
  bool needs_rate_met;    // fixed rate: only a configuration that achieved the offered rate did the
                          // same work
  std::function<std::optional<double>(const result_row&)> value;
};
const std::vector<peer_metric>& peer_metrics();

// knit's advantage over `peer` per repetition, paired by repetition number (interleaved
// runs measure rep r of both close in time): knit / peer when higher is better, else
// peer / knit, so above 1 knit is ahead. Median, min and max over the pairs.
rep_stat paired_ratio(const measured_config& knit, const measured_config& peer,
                      const peer_metric& m);

// "1.32× (1.20–1.41)": the median ratio with its min–max over repetitions.
std::string ratio_cell(const rep_stat& ratio);

// The section's markdown for one cost profile: the in-process table, where an in-process
// peer wins, one line per external peer and its own table; "" when there is no peer in it.
std::string peers_section(const std::vector<measured_config>& cs, const config_scope& sat,
                          const config_scope& rate);

}  // namespace knit::bench

// pool_stats: totals and the JSON form printed by knit-server on SIGUSR1.
#include "knit/stats.hpp"

#include <sstream>

namespace knit {
namespace {

// The worker counter fields, named once for both totals() and to_json().
struct worker_field {
  const char* name;
  std::uint64_t worker_stats::*member;
};
constexpr worker_field kWorkerFields[] = {
    {"calls_run", &worker_stats::calls_run},
    {"calls_stolen", &worker_stats::calls_stolen},
    {"calls_skipped", &worker_stats::calls_skipped},
    {"spin_hits", &worker_stats::spin_hits},
    {"spins", &worker_stats::spins},
    {"spins_skipped_shared_cpu", &worker_stats::spins_skipped_shared_cpu},
    {"spins_skipped_after_misses", &worker_stats::spins_skipped_after_misses},
    {"parks", &worker_stats::parks},
    {"wakes_doorbell", &worker_stats::wakes_doorbell},
    {"wakes_timeout", &worker_stats::wakes_timeout},
    {"peer_wakes", &worker_stats::peer_wakes},
    {"completion_signals", &worker_stats::completion_signals},
    {"sched_failures", &worker_stats::sched_failures},
};

void write_worker(std::ostringstream& out, const worker_stats& w, bool& first) {
  for (const auto& f : kWorkerFields) {
    out << (first ? "" : ",") << '"' << f.name << "\":" << w.*f.member;
    first = false;
  }
}

}  // namespace

worker_stats pool_stats::totals() const {
  worker_stats t;
  for (const auto& w : workers) {
    for (const auto& f : kWorkerFields) t.*f.member += w.*f.member;
  }
  return t;
}

std::string to_json(const pool_stats& s) {
  std::ostringstream out;
  out << "{\"threads\":" << s.threads << ",\"totals\":{"
      << "\"calls_submitted\":" << s.calls_submitted << ",\"calls_completed\":" << s.calls_completed
      << ",\"calls_rejected\":" << s.calls_rejected << ",\"calls_backlogged\":" << s.calls_backlogged
      << ",\"calls_cancelled\":" << s.calls_cancelled << ",\"calls_timed_out\":" << s.calls_timed_out
      << ",\"calls_failed\":" << s.calls_failed << ",\"host_wakes\":" << s.host_wakes
      << ",\"completion_batches\":" << s.completion_batches << ",\"calls_stuck\":" << s.calls_stuck
      << ",\"workers_replaced\":" << s.workers_replaced << ",\"retired_running\":" << s.retired_running;
  bool first = false;
  write_worker(out, s.totals(), first);
  out << "},\"workers\":[";
  for (std::size_t i = 0; i < s.workers.size(); ++i) {
    out << (i ? "," : "") << '{';
    bool f = true;
    write_worker(out, s.workers[i], f);
    out << '}';
  }
  out << "]}";
  return out.str();
}

}  // namespace knit

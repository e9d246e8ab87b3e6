// pool_stats: totals and the JSON form printed by knit-server on SIGUSR1.
#include "knit/stats.hpp"

#include <sstream>

namespace knit {
namespace {

// The worker counter fields, from the one list (knit/detail/worker_counters.hpp), for
// both totals() and to_json().
struct worker_field {
  const char* name;
  std::uint64_t worker_stats::*member;
};
constexpr worker_field kWorkerFields[] = {
#define KNIT_WORKER_FIELD(name, description) {#name, &worker_stats::name},
    KNIT_WORKER_COUNTERS(KNIT_WORKER_FIELD)
#undef KNIT_WORKER_FIELD
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
  for (const auto& f : kWorkerFields) t.*f.member += lent.*f.member;
  return t;
}

std::string to_json(const pool_stats& s) {
  std::ostringstream out;
  out << "{\"threads\":" << s.threads << ",\"totals\":{"
      << "\"calls_submitted\":" << s.calls_submitted << ",\"calls_completed\":" << s.calls_completed
      << ",\"calls_rejected\":" << s.calls_rejected
      << ",\"calls_backlogged\":" << s.calls_backlogged
      << ",\"calls_cancelled\":" << s.calls_cancelled
      << ",\"calls_timed_out\":" << s.calls_timed_out << ",\"calls_failed\":" << s.calls_failed
      << ",\"host_wakes\":" << s.host_wakes << ",\"completion_batches\":" << s.completion_batches
      << ",\"calls_stuck\":" << s.calls_stuck << ",\"workers_replaced\":" << s.workers_replaced
      << ",\"retired_running\":" << s.retired_running
      << ",\"lent_workers_started\":" << s.lent_workers_started
      << ",\"lent_workers_retired\":" << s.lent_workers_retired
      << ",\"lent_workers_now\":" << s.lent_workers_now;
  bool first = false;
  write_worker(out, s.totals(), first);
  out << "},\"workers\":[";
  for (std::size_t i = 0; i < s.workers.size(); ++i) {
    out << (i ? "," : "") << '{';
    bool f = true;
    write_worker(out, s.workers[i], f);
    out << '}';
  }
  out << ']';
  if (s.lent_workers_started > 0) {  // a pool that never lent one prints what it always did
    out << ",\"lent\":{";
    bool f = true;
    write_worker(out, s.lent, f);
    out << '}';
  }
  if (s.hosts.size() > 1) {  // a single-host pool's line stays as it was
    out << ",\"hosts\":[";
    for (std::size_t i = 0; i < s.hosts.size(); ++i) {
      const host_stats& h = s.hosts[i];
      out << (i ? "," : "") << "{\"index\":" << h.index
          << ",\"calls_submitted\":" << h.calls_submitted
          << ",\"calls_completed\":" << h.calls_completed
          << ",\"calls_rejected\":" << h.calls_rejected
          << ",\"calls_backlogged\":" << h.calls_backlogged
          << ",\"calls_cancelled\":" << h.calls_cancelled
          << ",\"calls_timed_out\":" << h.calls_timed_out << ",\"calls_failed\":" << h.calls_failed
          << ",\"calls_stuck\":" << h.calls_stuck << ",\"host_wakes\":" << h.host_wakes
          << ",\"completion_batches\":" << h.completion_batches << '}';
    }
    out << ']';
  }
  out << '}';
  return out.str();
}

}  // namespace knit

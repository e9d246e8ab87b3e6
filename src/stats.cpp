// pool_stats: totals and the JSON form printed by knit-server on SIGUSR1.
#include "knit/stats.hpp"

#include <sstream>

namespace knit {
namespace {

// The worker counter fields, named once for both totals() and to_json().
template <class F>
void for_each_worker_field(const worker_stats& w, F&& f) {
  f("calls_run", w.calls_run);
  f("calls_stolen", w.calls_stolen);
  f("calls_skipped", w.calls_skipped);
  f("spin_hits", w.spin_hits);
  f("spins", w.spins);
  f("parks", w.parks);
  f("wakes_doorbell", w.wakes_doorbell);
  f("wakes_timeout", w.wakes_timeout);
  f("peer_wakes", w.peer_wakes);
  f("completion_signals", w.completion_signals);
}

void write_worker(std::ostringstream& out, const worker_stats& w, bool& first) {
  for_each_worker_field(w, [&](const char* name, std::uint64_t v) {
    out << (first ? "" : ",") << '"' << name << "\":" << v;
    first = false;
  });
}

}  // namespace

worker_stats pool_stats::totals() const {
  worker_stats t;
  for (const auto& w : workers) {
    t.calls_run += w.calls_run;
    t.calls_stolen += w.calls_stolen;
    t.calls_skipped += w.calls_skipped;
    t.spin_hits += w.spin_hits;
    t.spins += w.spins;
    t.parks += w.parks;
    t.wakes_doorbell += w.wakes_doorbell;
    t.wakes_timeout += w.wakes_timeout;
    t.peer_wakes += w.peer_wakes;
    t.completion_signals += w.completion_signals;
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
      << ",\"completion_batches\":" << s.completion_batches;
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

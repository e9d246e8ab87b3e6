// Writes the Prometheus text exposition, family by family (metrics_exposition.hpp).
#include "ops/metrics_exposition.hpp"

#include <charconv>
#include <cstddef>

namespace knit_server {

namespace {

// Appends one family's text at a time; labels are fixed words and numbers, never user text,
// so no label value needs escaping (a HELP text does, for '\\' and newlines).
class page {
 public:
  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    for (char c : help) {
      if (c == '\\') {
        out_ += "\\\\";
      } else if (c == '\n') {
        out_ += "\\n";
      } else {
        out_ += c;
      }
    }
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }

  // name{labels} value. `labels` is the inside of the braces, already written ("" for none).
  void sample(std::string_view name, std::string_view labels, std::uint64_t value) {
    head(name, labels);
    out_ += std::to_string(value);
    out_ += '\n';
  }
  void sample(std::string_view name, std::string_view labels, double value) {
    head(name, labels);
    char digits[64];
    out_.append(digits, std::to_chars(digits, digits + sizeof digits, value).ptr);
    out_ += '\n';
  }

  std::string take() { return std::move(out_); }

 private:
  void head(std::string_view name, std::string_view labels) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      out_ += labels;
      out_ += '}';
    }
    out_ += ' ';
  }
  std::string out_;
};

// `host="N"` when there are several hosts, else "".
std::string host_label(const metrics_snapshot& s, std::size_t i) {
  if (s.hosts.size() <= 1) return {};
  return "host=\"" + std::to_string(i) + '"';
}

// Joins two label lists with a comma when both are there.
std::string join(std::string a, std::string_view b) {
  if (!a.empty() && !b.empty()) a += ',';
  a += b;
  return a;
}

std::string quoted(std::string_view key, std::string_view value) {
  std::string l(key);
  l += "=\"";
  l += value;
  l += '"';
  return l;
}

void write_requests(page& p, const metrics_snapshot& s) {
  p.family("knit_http_requests_total", "counter",
           "HTTP responses by route and status code (route other: unknown paths and "
           "requests refused before routing).");
  for (std::size_t h = 0; h < s.hosts.size(); ++h) {
    const request_totals& t = s.hosts[h].requests;
    for (std::size_t r = 0; r < kRouteCount; ++r) {
      for (std::size_t c = 0; c < kCodeSlots; ++c) {
        if (t.responses[r][c] == 0) continue;
        const std::string code =
            c < kCountedCodes.size() ? std::to_string(kCountedCodes[c]) : std::string("other");
        p.sample("knit_http_requests_total",
                 join(join(host_label(s, h), quoted("route", to_string(static_cast<route>(r)))),
                      quoted("code", code)),
                 t.responses[r][c]);
      }
    }
  }
  p.family("knit_http_request_duration_seconds", "histogram",
           "Time from a request read whole to its response written, by route.");
  for (std::size_t h = 0; h < s.hosts.size(); ++h) {
    const request_totals& t = s.hosts[h].requests;
    for (std::size_t r = 0; r < kRouteCount; ++r) {
      const std::string labels =
          join(host_label(s, h), quoted("route", to_string(static_cast<route>(r))));
      std::uint64_t cumulative = 0;
      for (std::size_t b = 0; b < kLatencyBuckets; ++b) {
        cumulative += t.buckets[r][b];
        const std::string_view le =
            b < kLatencyBoundLabels.size() ? kLatencyBoundLabels[b] : "+Inf";
        p.sample("knit_http_request_duration_seconds_bucket", join(labels, quoted("le", le)),
                 cumulative);
      }
      p.sample("knit_http_request_duration_seconds_sum", labels,
               static_cast<double>(t.sum_ns[r]) / 1e9);
      p.sample("knit_http_request_duration_seconds_count", labels, cumulative);
    }
  }
}

void write_loop_figures(page& p, const metrics_snapshot& s) {
  p.family("knit_admission_refusals_total", "counter",
           "Heavy calls answered 503 + Retry-After instead of run, by reason.");
  for (std::size_t h = 0; h < s.hosts.size(); ++h) {
    const host_metrics& m = s.hosts[h];
    const std::string host = host_label(s, h);
    p.sample("knit_admission_refusals_total", join(host, "reason=\"queue_delay\""),
             m.refused_queue_delay);
    p.sample("knit_admission_refusals_total", join(host, "reason=\"queue_count\""),
             m.refused_queue_count);
    p.sample("knit_admission_refusals_total", join(host, "reason=\"pool_full\""),
             m.refused_pool_full);
    p.sample("knit_admission_refusals_total", join(host, "reason=\"write_budget\""),
             m.refused_write_budget);
    p.sample("knit_admission_refusals_total", join(host, "reason=\"queue_wait\""),
             m.refused_queue_wait);
  }
  const auto per_host = [&](std::string_view name, std::string_view type, std::string_view help,
                            std::uint64_t host_metrics::*field) {
    p.family(name, type, help);
    for (std::size_t h = 0; h < s.hosts.size(); ++h) {
      p.sample(name, host_label(s, h), s.hosts[h].*field);
    }
  };
  per_host("knit_stuck_calls_total", "counter",
           "Heavy calls given up as stuck (answered 504; each one's worker replaced).",
           &host_metrics::stuck_calls);
  per_host("knit_open_connections", "gauge", "Open client connections.",
           &host_metrics::open_connections);
  per_host("knit_buffered_bytes", "gauge",
           "Bytes the open connections hold in their buffers (capacity).",
           &host_metrics::buffered_bytes);
  p.family("knit_parked_bytes", "gauge",
           "Bytes counted against KNIT_MEMORY_BUDGET_MB for unfinished writes (user space and "
           "kernel send queues), every event loop together.");
  p.sample("knit_parked_bytes", "", s.parked_bytes);
  p.family("knit_memory_budget_bytes", "gauge",
           "KNIT_MEMORY_BUDGET_MB in bytes: above it, new /ssr and /jwt get 503.");
  p.sample("knit_memory_budget_bytes", "", s.budget_bytes);
  p.family("knit_ready", "gauge", "1 while /readyz answers 200, else 0.");
  p.sample("knit_ready", "", std::uint64_t{s.ready == readiness::ready ? 1U : 0U});
  p.family("knit_draining", "gauge", "1 once SIGTERM has begun the drain, else 0.");
  p.sample("knit_draining", "", std::uint64_t{s.ready == readiness::draining ? 1U : 0U});
}

void write_pool(page& p, const knit::pool_stats& ps) {
  p.family("knit_pool_threads", "gauge", "Worker seats of the knit pool.");
  p.sample("knit_pool_threads", "", std::uint64_t{ps.threads});
  // The host side: one series per pool host when several are attached, else the pool's own.
  const bool per_host = ps.hosts.size() > 1;
  const auto host_counter = [&](std::string_view name, std::string_view help, std::uint64_t total,
                                std::uint64_t knit::host_stats::*field) {
    p.family(name, "counter", help);
    if (!per_host) return p.sample(name, "", total);
    for (const knit::host_stats& h : ps.hosts) {
      p.sample(name, quoted("host", std::to_string(h.index)), h.*field);
    }
  };
  host_counter("knit_pool_calls_submitted_total", "Calls accepted by the pool.", ps.calls_submitted,
               &knit::host_stats::calls_submitted);
  host_counter("knit_pool_calls_completed_total", "Calls whose handler ran, any outcome.",
               ps.calls_completed, &knit::host_stats::calls_completed);
  host_counter("knit_pool_calls_rejected_total", "Calls the pool refused (full, shut down).",
               ps.calls_rejected, &knit::host_stats::calls_rejected);
  host_counter("knit_pool_calls_backlogged_total", "Calls that waited in a host's backlog.",
               ps.calls_backlogged, &knit::host_stats::calls_backlogged);
  host_counter("knit_pool_calls_cancelled_total", "Calls whose handler got errc::cancelled.",
               ps.calls_cancelled, &knit::host_stats::calls_cancelled);
  host_counter("knit_pool_calls_timed_out_total", "Calls whose handler got errc::timed_out.",
               ps.calls_timed_out, &knit::host_stats::calls_timed_out);
  host_counter("knit_pool_calls_failed_total", "Tasks that threw.", ps.calls_failed,
               &knit::host_stats::calls_failed);
  host_counter("knit_pool_host_wakes_total", "FUTEX_WAKE system calls issued by a host.",
               ps.host_wakes, &knit::host_stats::host_wakes);
  host_counter("knit_pool_completion_batches_total",
               "Completion rounds that found at least one result.", ps.completion_batches,
               &knit::host_stats::completion_batches);
  p.family("knit_pool_calls_stuck_total", "counter",
           "Running calls given up on (stuck_after or the shutdown's deadline).");
  p.sample("knit_pool_calls_stuck_total", "", ps.calls_stuck);
  p.family("knit_pool_workers_replaced_total", "counter",
           "Retired workers whose seat got a fresh thread.");
  p.sample("knit_pool_workers_replaced_total", "", ps.workers_replaced);
  p.family("knit_pool_retired_running", "gauge",
           "Retired workers whose stuck task has not returned yet.");
  p.sample("knit_pool_retired_running", "", ps.retired_running);
  p.family("knit_pool_lent_workers_started_total", "counter",
           "Extra workers lent while every worker was held by a long call and calls waited.");
  p.sample("knit_pool_lent_workers_started_total", "", ps.lent_workers_started);
  p.family("knit_pool_lent_workers_retired_total", "counter",
           "Lent workers that ended (idle, or retired for a stuck call).");
  p.sample("knit_pool_lent_workers_retired_total", "", ps.lent_workers_retired);
  p.family("knit_pool_lent_workers", "gauge", "Lent workers alive now.");
  p.sample("knit_pool_lent_workers", "", ps.lent_workers_now);
  // Every worker counter, from the one list of them, with its description as the help: one
  // series per seat, and worker="lent" for every lent worker's together (they have no seat).
#define KNIT_METRICS_WORKER_FAMILY(name, description)                                 \
  p.family("knit_pool_worker_" #name "_total", "counter", description);               \
  for (std::size_t w = 0; w < ps.workers.size(); ++w) {                               \
    p.sample("knit_pool_worker_" #name "_total", quoted("worker", std::to_string(w)), \
             ps.workers[w].name);                                                     \
  }                                                                                   \
  p.sample("knit_pool_worker_" #name "_total", quoted("worker", "lent"), ps.lent.name);
  KNIT_WORKER_COUNTERS(KNIT_METRICS_WORKER_FAMILY)
#undef KNIT_METRICS_WORKER_FAMILY
}

void write_worker_processes(page& p, const worker_process_figures& w) {
  const auto one = [&p](std::string_view name, std::string_view type, std::string_view help,
                        std::uint64_t value) {
    p.family(name, type, help);
    p.sample(name, "", value);
  };
  one("knit_worker_process_crashes_total", "counter",
      "Worker processes that died during a call or broke the protocol (the call got 500).",
      w.crashed);
  one("knit_worker_process_respawns_total", "counter",
      "Worker processes started in place of one that crashed or was killed.", w.respawned);
  one("knit_worker_process_kills_total", "counter",
      "Worker processes killed because their call ran past its deadline or stuck limit.", w.killed);
  one("knit_worker_processes", "gauge", "Worker processes running now.", w.live);
  one("knit_worker_processes_crash_looping", "gauge",
      "Pool workers whose processes crash in a loop (their respawns back off).", w.degraded);
  one("knit_worker_process_sandbox_kills_total", "counter",
      "Worker processes ended by their sandbox: a task made a refused system call.",
      w.sandbox_kills);
  one("knit_worker_process_memory_kills_total", "counter",
      "Worker processes replaced after a task went over the memory limit.", w.memory_kills);
  one("knit_worker_process_calls_resent_total", "counter",
      "Calls sent again to another worker process: theirs ended before it began them.", w.resent);
  one("knit_worker_process_calls_moved_total", "counter",
      "Calls taken back from behind a slow call and sent to an idle worker process.", w.moved);
  one("knit_worker_process_protocol_kills_total", "counter",
      "Worker processes killed for breaking the protocol (a bad answer, more wakes than "
      "answers) or hanging (a call not begun within its begin timeout).",
      w.protocol_kills);
}

}  // namespace

std::string format_metrics(const metrics_snapshot& snapshot) {
  page p;
  write_requests(p, snapshot);
  write_loop_figures(p, snapshot);
  if (snapshot.pool) write_pool(p, *snapshot.pool);
  if (snapshot.workers) write_worker_processes(p, *snapshot.workers);
  return p.take();
}

}  // namespace knit_server

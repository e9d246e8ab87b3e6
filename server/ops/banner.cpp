// The start-up banner and the listening URL.
#include "ops/banner.hpp"

#include <cstring>

#include "knit/loop_slice.hpp"
#include "knit/process.hpp"

namespace knit_server {

std::string url_of(const boost::asio::ip::tcp::endpoint& ep) {
  const bool v6 = ep.address().is_v6();  // an IPv6 literal goes in brackets in a URL
  std::string url = "http://";
  if (v6) url += '[';
  url += ep.address().to_string();
  if (v6) url += ']';
  url += ':';
  url += std::to_string(ep.port());
  return url;
}

namespace {

std::string hosts_line(unsigned hosts) {
  if (hosts == 1) return "hosts: 1 (one event loop)";
  return "hosts: " + std::to_string(hosts) +
         " (event loops, each with its own thread, io_context and SO_REUSEPORT listener on the "
         "port; a connection stays on the loop that accepted it)";
}

// Which of the threat model's layers confine the worker processes here (the namespaces
// depend on the kernel and the service manager: the packaged unit refuses them).
std::string sandbox_line(const knit::process_options& options) {
  if (options.sandbox != knit::process_sandbox::strict) {
    return "sandbox: off (KNIT_WORKER_SANDBOX=off: crash isolation only, no defence against a "
           "hostile task)";
  }
  const knit::process_confinement c = knit::current_process_confinement();
  std::string line = "sandbox: strict (seccomp filter, no capabilities, own stdio), namespaces ";
  line += c.namespaces ? "on (user, pid, mount, net)" : "off (" + c.why_not + ")";
  line += c.host_undumpable ? ", host undumpable" : ", host dumpable";
  if (c.namespaces && !c.private_proc_not.empty())
    line += ", no private /proc: " + c.private_proc_not;
  return line;
}

// What KNIT_HEAVY_SHARE did: the workers' nice, and whether the loops got their short slice
// (refused on kernels before 6.12 or under a seccomp filter: then only the nice acts).
std::string heavy_share_line(const knit::pool_options& p) {
  if (p.heavy_share == 0 || p.heavy_share >= 100) {
    return "heavy share: off (KNIT_HEAVY_SHARE=" + std::to_string(p.heavy_share) +
           ": workers and loops at the scheduler's defaults)";
  }
  std::string line =
      "heavy share: " + std::to_string(p.heavy_share) +
      "% of a CPU a worker shares with a loop, when both saturate (" +
      (p.worker_nice != 0 ? "KNIT_WORKER_NICE=" + std::to_string(p.worker_nice) + " wins"
                          : "workers nice +" + std::to_string(p.heavy_share_nice())) +
      "); loop slice ";
  const knit::loop_slice_status s = knit::loop_slice_now();
  line += std::to_string(s.slice.count()) + " us: ";
  if (s.refused == 0) {
    line += "applied on " + std::to_string(s.applied) + " loop thread(s)";
  } else {
    line += "refused on " + std::to_string(s.refused) + " loop thread(s) (" +
            std::strerror(s.first_error) +
            "; a kernel before 6.12 or a seccomp filter: loops wait out a worker's slice)";
  }
  return line;
}

std::string origin_text(budget_origin origin) {
  switch (origin) {
    case budget_origin::setting: return "KNIT_MEMORY_BUDGET_MB";
    case budget_origin::cgroup: return "half the cgroup's memory.max";
    case budget_origin::fixed: return "fixed default: no KNIT_MEMORY_BUDGET_MB, no cgroup limit";
  }
  return "?";
}

}  // namespace

std::string budget_line(const server_config& cfg, const write_budget& budget,
                        budget_origin origin) {
  constexpr std::size_t kMiB = 1024 * 1024;
  const std::string sndbuf =
      cfg.sndbuf_kb == 0 ? std::string("autotuned: KNIT_SNDBUF_KB=0")
                         : "SO_SNDBUF " + std::to_string(cfg.sndbuf_kb) + " KiB, doubled by Linux";
  return "memory budget: " + std::to_string(budget.limit() / kMiB) + " MB (" + origin_text(origin) +
         ") for unfinished writes, user space and kernel; kernel send " +
         "queue <= " + std::to_string(budget.kernel_cap() / 1024) + " KiB per connection (" +
         sndbuf + "); sheds /ssr and /jwt with 503 after " +
         std::to_string(budget.writes_admitted(kLargestResponseBytes)) +
         " slow readers of the largest page (" + std::to_string(kLargestResponseBytes / 1000) +
         " KB)";
}

void print_banner(const server_config& cfg, const knit::pool* pool, unsigned threads,
                  const offload_options& auto_options, const write_budget& budget,
                  budget_origin origin, std::string_view io_line, log_writer& out) {
  // The route list exactly as the reference server prints it.
  out.write_line("GET  /ping");
  out.write_line("POST /ssr   body: { name?, plan?, bio?, projects? }");
  out.write_line("POST /jwt   body: { user: { id, email?, role? }, ttlSec? }");
  if (cfg.mode == exec_mode::auto_offload) {
    out.write_line("mode: auto (/ssr and /jwt each inline while its average cost is under " +
                   std::to_string(auto_options.inline_below_us) +
                   " us, else on knit workers) pool: " + pool->describe());
  } else if (pool && cfg.worker_isolation == isolation::process) {
    out.write_line(
        "mode: pooled, isolation process (/ssr and /jwt in worker processes knit-proc-N, one "
        "per knit worker; a crash fails its own call) pool: " +
        pool->describe());
    out.write_line(sandbox_line(pool->options().process));
  } else if (pool) {
    out.write_line("mode: pooled (/ssr and /jwt on knit workers) pool: " + pool->describe());
  } else if (cfg.mode == exec_mode::asio_pool) {
    out.write_line("mode: asio (/ssr and /jwt on boost::asio::thread_pool(" +
                   std::to_string(threads) + "), results posted back)");
  } else if (cfg.mode == exec_mode::multi_thread) {
    out.write_line("mode: multi (one io_context run by " + std::to_string(threads) +
                   " threads, every route inline)");
  } else {
    out.write_line("mode: inline (/ssr and /jwt on the host thread, no pool)");
  }
  out.write_line(hosts_line(cfg.hosts));
  out.write_line(std::string(io_line));
  if (pool) out.write_line(heavy_share_line(pool->options()));
  out.write_line("cost profile: " + cfg.cost_profile + " (ssr " + std::to_string(cfg.ssr_cost_us) +
                 " us, jwt " + std::to_string(cfg.jwt_cost_us) + " us)");
  out.write_line(
      "admission: 503 when the expected wait exceeds " +
      std::to_string(cfg.max_queue_delay.count()) + " ms or " + std::to_string(cfg.max_queued) +
      " calls are ahead, or when a call has not started " +
      std::to_string(cfg.max_queue_wait().count() / 1000) + " ms after it was accepted (0 = off)");
  out.write_line(budget_line(cfg, budget, origin));
  out.write_line("drain: on SIGTERM /readyz answers 503 for " +
                 std::to_string(cfg.drain_delay.count()) +
                 " ms (KNIT_DRAIN_DELAY_MS) before the listener closes");
}

}  // namespace knit_server

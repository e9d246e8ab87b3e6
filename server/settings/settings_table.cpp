// The rows of knit-server's settings (settings_table.hpp). Each default here is the one the
// server runs with; settings_test checks them against what --print-config reports.
#include "settings/settings_table.hpp"

#include <array>

#include "config.hpp"
#include "placement/offload_policy.hpp"
#include "settings/text_layout.hpp"

namespace knit_server {
namespace {

using enum setting_group;
using enum setting_kind;

// One row a setting, each field named; the layout is kept by hand (clang-format would give every
// field a line of its own).
// clang-format off
constexpr std::array kTable = std::to_array<setting>({
    // --- Server ------------------------------------------------------------------------------
    {.env = "HOST", .flag = "--host", .group = server, .kind = address, .unit = "ADDRESS",
     .default_value = "127.0.0.1",
     .help = "Address to bind: an IPv4 or IPv6 literal, or localhost (0.0.0.0: every interface)"},
    {.env = "PORT", .flag = "--port", .group = server, .kind = number, .unit = "PORT",
     .default_value = "3000", .lo = 0, .hi = 65535, .zero_means = "the kernel picks a free port",
     .help = "TCP port to listen on (below 1024 needs CAP_NET_BIND_SERVICE)"},
    {.env = "KNIT_MODE", .flag = "--mode", .group = server, .kind = choice, .unit = "MODE",
     .default_value = "pooled", .choices = "inline pooled asio multi auto",
     .help = "Where /ssr and /jwt run: pooled on a knit pool of KNIT_THREADS workers; inline on "
             "the event loop; auto per route, inline while cheap; asio on a "
             "boost::asio::thread_pool; multi inline on one io_context run by KNIT_THREADS "
             "threads (docs/server-modes.md)"},
    {.env = "KNIT_HOSTS", .flag = "--hosts", .group = server, .kind = number, .unit = "N",
     .default_value = "1", .lo = 1, .hi = server_config::kMaxHosts,
     .help = "Event loops, each a thread with its own SO_REUSEPORT listener on the port: at most "
             "64 with a knit pool (pooled, auto), 1 in multi mode (docs/server-hosts.md)"},
    {.env = "KNIT_IO", .flag = "--io", .group = server, .kind = choice, .unit = "IO",
     .default_value = "auto", .choices = "auto uring epoll",
     .help = "How each event loop waits and does its reads and writes: uring an io_uring (a "
             "turn's reads and writes submitted together), epoll Asio's reactor, auto uring "
             "where the kernel grants it, else epoll; the banner says which runs; multi mode "
             "is always epoll (docs/server-io.md)"},
    {.env = "KNIT_AUTO_INLINE_US", .flag = "--auto-inline-us", .group = server, .kind = number,
     .unit = "US", .default_value = "10", .lo = 1, .hi = offload_options::kMaxInlineUs,
     .help = "auto mode: a route moves to the pool once its average CPU cost per call rises "
             "above this, and back inline once it falls below 3/5 of it"},
    {.env = "JWT_SECRET", .group = server, .kind = text,
     .default_note = "32 random bytes for each run: tokens do not verify after a restart",
     .help = "HS256 key for /jwt; from the environment only (a command line is visible to "
             "every local user): keep the file that holds it mode 0600"},

    // --- Pool (knit workers) -----------------------------------------------------------------
    {.env = "KNIT_THREADS", .flag = "--threads", .group = pool, .kind = number, .unit = "N",
     .default_value = "1", .lo = 1, .hi = 1024,
     .help = "Workers (pooled, auto and asio mode) or io threads (multi mode)"},
    {.env = "KNIT_SPIN", .flag = "--spin", .group = pool, .kind = number, .unit = "US",
     .default_note = "50 with one worker, 0 with more", .lo = 0, .hi = 1'000'000,
     .help = "How long an idle worker spins for work before it parks, in us"},
    {.env = "KNIT_SPIN_GATE", .flag = "--spin-gate", .group = pool, .kind = choice, .unit = "GATE",
     .default_note = "auto with the default spin, off with a KNIT_SPIN given",
     .choices = "auto off",
     .help = "auto: a worker spins only while every thread of the pool can have a CPU of its "
             "own; off: it spins its whole budget"},
    {.env = "KNIT_PARK", .flag = "--park", .group = pool, .kind = number, .unit = "MS",
     .default_value = "0", .lo = 0, .hi = 3'600'000, .zero_means = "until woken",
     .help = "How long a parked worker sleeps before it looks for work again, in ms"},
    {.env = "KNIT_DOORBELL", .flag = "--doorbell", .group = pool, .kind = on_off, .unit = "0|1",
     .default_value = "1",
     .help = "1: the event loop wakes a parked worker; 0: workers find work only at their "
             "KNIT_PARK timeout, which must then be above 0"},
    {.env = "KNIT_STEAL", .flag = "--steal", .group = pool, .kind = on_off, .unit = "0|1",
     .default_value = "1", .help = "1: an idle worker takes calls queued for a busy one"},
    {.env = "KNIT_MAX_SPINNERS", .flag = "--max-spinners", .group = pool, .kind = number,
     .unit = "N", .default_value = "0", .lo = 0, .hi = 1024, .zero_means = "no cap",
     .help = "Workers spinning at once, at most"},
    {.env = "KNIT_WAKE_COST", .flag = "--wake-cost", .group = pool, .kind = number, .unit = "US",
     .default_value = "50", .lo = 0, .hi = 1'000'000,
     .zero_means = "never queue behind a busy worker",
     .help = "A call queues behind a busy worker instead of waking a parked one only if that "
             "worker should be free sooner than this, in us"},
    {.env = "KNIT_QUEUE_CAPACITY", .flag = "--queue-capacity", .group = pool, .kind = number,
     .unit = "N", .default_value = "1024", .lo = 1, .hi = 16'777'216,
     .help = "Slots of each worker's ring, rounded up to a power of two; calls beyond it wait "
             "in a backlog, never dropped"},
    {.env = "KNIT_WORKER_CPUS", .flag = "--worker-cpus", .group = pool, .kind = cpu_list,
     .unit = "CPUS", .default_note = "any CPU (no pinning)",
     .help = "CPUs the workers are pinned to, worker i to the i-th in the list (wrapping), "
             "e.g. 2-5,8"},
    {.env = "KNIT_WORKER_NICE", .flag = "--worker-nice", .group = pool, .kind = number, .unit = "N",
     .default_value = "0", .lo = 0, .hi = 19, .zero_means = "inherited",
     .help = "Nice value each worker thread gives itself: above 0 it yields the CPU to the "
             "event loop when both want it"},
    {.env = "KNIT_WORKER_SCHED", .flag = "--worker-sched", .group = pool, .kind = choice,
     .unit = "CLASS", .default_value = "other", .choices = "other batch idle",
     .help = "Scheduling class of each worker thread: other (inherited), batch (never preempts "
             "on wake-up) or idle (runs only when nothing else wants the CPU)"},
    {.env = "KNIT_HEAVY_SHARE", .flag = "--heavy-share", .group = pool, .kind = number,
     .unit = "PERCENT", .default_value = "25", .lo = 0, .hi = 100, .zero_means = "off",
     .help = "Share of a CPU /ssr and /jwt keep when a worker shares it with an event loop and "
             "both want all of it: the workers raise their nice (25: +5, 10: +10; 50 or 100: "
             "unchanged) and each loop asks the kernel for a 200 us slice, so a request wakes "
             "its loop at once instead of after the worker's slice; KNIT_WORKER_NICE, when "
             "set, wins. No guarantee against other processes on the CPU. Off (0 or 100): a "
             "loop wakes a worker that shares its CPU once, at the end of its turn, and checks "
             "that its workers are awake once a turn, not after each call "
             "(pool_options::wake_at_turn_end)",
     .why = "The library's default is 0 (pool_options::heavy_share): a program that did not "
            "ask keeps its threads' scheduling. The server's loop answers /ping beside "
            "saturated heavy routes: on a shared CPU a loop at equal weight waited out the "
            "worker's slice (p99 8x its quiet value)"},

    // --- Process workers ---------------------------------------------------------------------
    {.env = "KNIT_ISOLATION", .flag = "--isolation", .group = process_workers, .kind = choice,
     .unit = "KIND", .default_value = "thread", .choices = "thread process",
     .help = "pooled mode: thread runs /ssr and /jwt on the workers; process runs them in a "
             "worker process per worker (knit-proc-N), so a task that crashes fails its own "
             "call (500) and the server lives on (docs/process-workers.md)"},
    {.env = "KNIT_WORKER_SANDBOX", .flag = "--worker-sandbox", .group = process_workers,
     .kind = choice, .unit = "MODE", .default_value = "strict", .choices = "strict off",
     .help = "strict: each worker process runs under a seccomp filter with no capabilities, in "
             "namespaces of its own where the kernel allows; off: crash isolation only",
     .why = "The library's default is off (process_options::sandbox): a program's own tasks "
            "need no defence against it. The server's tasks parse request bodies from the "
            "network, so a task turned hostile must be contained."},
    {.env = "KNIT_PROCESS_LANES", .flag = "--process-lanes", .group = process_workers,
     .kind = number, .unit = "N", .default_value = "32", .lo = 1, .hi = 32,
     .help = "Calls an event loop may have in one worker process at once",
     .why = "The library's default is 2 (process_options::lanes): a slow call holds up at most "
            "one behind it. On a CPU the event loop shares with its worker process, the child "
            "gets new calls only at the loop's next drain, so it needs a deep queue: saturating "
            "heavy throughput on one CPU rose from 0.43x thread mode's at 1 lane to 0.97x at 32 "
            "(bench/results/process-lanes). A call held behind a slow one is still given up "
            "by KNIT_MAX_QUEUE_WAIT_MS, or moved to an idle worker process."},
    {.env = "KNIT_WORKER_MEMORY_MB", .flag = "--worker-memory-mb", .group = process_workers,
     .kind = number, .unit = "MB", .default_value = "1024", .lo = 0, .hi = 1'048'576,
     .zero_means = "no limit",
     .help = "Address space a worker process's tasks may add; a task over it fails its call "
             "(500) and its worker process is replaced",
     .why = "The library sets no limit (process_options::memory_limit 0): it cannot know what "
            "a program's tasks need. The server's tasks render at most a 64 KiB body, far "
            "below 1 GiB, so a request that makes a task allocate without bound costs one "
            "worker process, not the host's memory."},
    {.env = "KNIT_WORKER_SPARE", .flag = "--worker-spare", .group = process_workers, .kind = on_off,
     .unit = "0|1", .default_value = "1",
     .help = "1: a spare worker process per worker, up and idle, replaces a crashed or killed "
             "one without a spawn; 0: none",
     .why = "Off in the library (process_options::spare_child): a program that never crashes "
            "pays nothing. For the server, a kill to the replacement's first answer took "
            "2.5-2.8 ms (median) with a spare and 5.0-5.4 ms without "
            "(bench/results/process-recovery-spare), for about 2 MiB (PSS) of idle process "
            "per worker and no CPU."},

    // --- Limits ------------------------------------------------------------------------------
    {.env = "KNIT_MAX_CONNECTIONS", .flag = "--max-connections", .group = limits, .kind = number,
     .unit = "N", .default_value = "10000", .lo = 1, .hi = 1'000'000,
     .help = "Open connections at most; each may take up to about 0.93 MiB in the worst case"},
    {.env = "KNIT_IDLE_TIMEOUT_MS", .flag = "--idle-timeout-ms", .group = limits, .kind = number,
     .unit = "MS", .default_value = "30000", .lo = 1, .hi = 3'600'000,
     .help = "A connection idle, or with a read or write stalled, this long is closed"},
    {.env = "KNIT_MEMORY_BUDGET_MB", .flag = "--memory-budget-mb", .group = limits, .kind = number,
     .unit = "MB", .default_note = "half the cgroup's memory.max, else 1024", .lo = 1,
     .hi = server_config::kMaxMemoryBudgetMb,
     .help = "Memory unfinished writes may hold, user space and kernel, before new /ssr and "
             "/jwt get 503"},
    {.env = "KNIT_SNDBUF_KB", .flag = "--sndbuf-kb", .group = limits, .kind = number, .unit = "KB",
     .default_value = "64", .lo = 4, .hi = server_config::kMaxSndbufKb,
     .zero_means = "the kernel's autotuning",
     .help = "SO_SNDBUF of each accepted socket, which Linux doubles: a connection's kernel "
             "send queue holds at most twice this"},
    {.env = "KNIT_MAX_QUEUE_MS", .flag = "--max-queue-ms", .group = limits, .kind = number,
     .unit = "MS", .default_value = "250", .lo = 0, .hi = 3'600'000, .zero_means = "off",
     .help = "Admission (pooled and auto mode): an /ssr or /jwt expected to wait longer than "
             "this for a worker gets 503 with Retry-After at once"},
    {.env = "KNIT_MAX_QUEUED", .flag = "--max-queued", .group = limits, .kind = number, .unit = "N",
     .default_value = "4096", .lo = 0, .hi = 1'000'000, .zero_means = "off",
     .help = "Admission: ...or finding this many calls queued ahead of it"},
    {.env = "KNIT_MAX_QUEUE_WAIT_MS", .flag = "--max-queue-wait-ms", .group = limits,
     .kind = number, .unit = "MS", .default_note = "1.4 x KNIT_MAX_QUEUE_MS", .lo = 0,
     .hi = 3'600'000, .zero_means = "no deadline",
     .help = "An accepted call that no worker has started within this gets 503 instead of "
             "running"},
    {.env = "KNIT_MAX_PENDING", .flag = "--max-pending", .group = limits, .kind = number,
     .unit = "N", .default_value = "0", .lo = 0, .hi = 4'294'967'295, .zero_means = "no limit",
     .help = "The pool's cap on calls accepted but not yet answered, per event loop"},
    {.env = "KNIT_STUCK_MS", .flag = "--stuck-ms", .group = limits, .kind = number, .unit = "MS",
     .default_value = "30000", .lo = 0, .hi = 86'400'000, .zero_means = "never",
     .help = "A pool call running longer than this is answered 504 and its worker replaced",
     .why = "The library's pool_options::stuck_after is 0 (never): a program may run long "
            "calls on purpose. A server must answer every client, so it takes 30 s, the "
            "default of the library's own pool_options::from_env() too."},
    {.env = "KNIT_LEND_WORKERS", .flag = "--lend-workers", .group = limits, .kind = number,
     .unit = "N", .default_note = "KNIT_THREADS", .lo = 0, .hi = 1024, .zero_means = "never",
     .help = "When every worker has run its call for half of KNIT_MAX_QUEUE_WAIT_MS and calls "
             "wait behind them, the pool lends up to this many extra worker threads (worker "
             "processes per event loop under KNIT_ISOLATION=process), each ended once idle, "
             "so one slow call does not turn the calls behind it into 503",
     .why = "The library lends none unless asked (pool_options::lend_after 0): a program may "
            "want exactly its threads. A server answers each call within its queue-wait "
            "deadline when it can: a slow call then holds one thread, not the queue."},

    // --- Stop --------------------------------------------------------------------------------
    {.env = "KNIT_DRAIN_DELAY_MS", .flag = "--drain-delay-ms", .group = stop, .kind = number,
     .unit = "MS", .default_value = "0", .lo = 0, .hi = server_config::kMaxDrainDelay.count(),
     .help = "At SIGTERM, how long /readyz answers 503 while every other request is still "
             "served, so a load balancer takes the server out first; then the stop begins"},
    {.env = "KNIT_STOP_TIMEOUT_MS", .flag = "--stop-timeout-ms", .group = stop, .kind = number,
     .unit = "MS", .default_value = "10000", .lo = 0, .hi = 86'400'000, .zero_means = "no bound",
     .help = "The most the stop may take; past it the clients still waiting get 503 and the "
             "exit code is 3"},

    // --- Benchmark only ----------------------------------------------------------------------
    {.env = "KNIT_COST_PROFILE", .flag = "--cost-profile", .group = benchmark, .kind = choice,
     .unit = "NAME", .default_value = "native", .choices = "native bun",
     .help = "bun: /ssr and /jwt also burn the reference Bun server's CPU per call (76 and "
             "72 us); native: nothing added"},
    {.env = "KNIT_SSR_COST_US", .flag = "--ssr-cost-us", .group = benchmark, .kind = number,
     .unit = "US", .default_note = "the profile's (76 with bun, else 0)", .lo = 0, .hi = 10'000'000,
     .help = "CPU /ssr burns per call, in place of the profile's"},
    {.env = "KNIT_JWT_COST_US", .flag = "--jwt-cost-us", .group = benchmark, .kind = number,
     .unit = "US", .default_note = "the profile's (72 with bun, else 0)", .lo = 0, .hi = 10'000'000,
     .help = "CPU /jwt burns per call, in place of the profile's"},

    // --- Hidden ------------------------------------------------------------------------------
    {.env = "KNIT_PROCESS_HOST_RING", .group = hidden, .kind = removed,
     .help = "removed with the second process path: every loop now calls its worker "
             "processes through their shared mappings"},
    {.env = "KNIT_TEST_WORKER_START_DELAY_MS", .group = hidden, .kind = test_hook,
     .help = "tests: a worker process sleeps this many ms before its handshake"},
    {.env = "KNIT_TEST_WORKER_EXIT", .group = hidden, .kind = test_hook,
     .help = "tests: a worker process exits with this code instead of starting"},
});
// clang-format on

std::string join_choices(std::string_view choices, std::string_view last_separator) {
  std::string out;
  std::size_t start = 0;
  while (start < choices.size()) {
    std::size_t end = choices.find(' ', start);
    if (end == std::string_view::npos) end = choices.size();
    if (!out.empty()) out += end == choices.size() ? last_separator : ", ";
    out += choices.substr(start, end - start);
    start = end + 1;
  }
  return out;
}

}  // namespace

std::span<const setting> settings_table() noexcept { return kTable; }

const setting* find_setting(std::string_view env) noexcept {
  for (const setting& row : kTable) {
    if (row.env == env) return &row;
  }
  return nullptr;
}

std::size_t setting_index(const setting& row) noexcept {
  return static_cast<std::size_t>(&row - kTable.data());
}

std::string_view group_title(setting_group group) noexcept {
  switch (group) {
    case setting_group::server: return "Server";
    case setting_group::pool: return "Pool (knit workers)";
    case setting_group::process_workers: return "Process workers (KNIT_ISOLATION=process)";
    case setting_group::limits: return "Limits";
    case setting_group::stop: return "Stop (SIGTERM)";
    case setting_group::benchmark: return "Benchmark only (cost emulation)";
    case setting_group::hidden: return "";
  }
  return "";
}

std::string accepted_text(const setting& row) {
  const std::string range =
      cat("an integer from ", std::to_string(row.lo), " to ", std::to_string(row.hi));
  switch (row.kind) {
    case setting_kind::number:
      if (row.lo > 0 && !row.zero_means.empty()) {
        return cat("0 (", row.zero_means, ") or ", range);
      }
      return range;
    case setting_kind::choice: return join_choices(row.choices, " or ");
    case setting_kind::on_off: return "0 or 1";
    case setting_kind::address:
      return "an IP address such as 127.0.0.1, 0.0.0.0 or ::1, or localhost";
    case setting_kind::cpu_list: return "a CPU list such as 0,2,4-7";
    case setting_kind::text: return "any text";
    case setting_kind::removed: return "it unset";
    case setting_kind::test_hook: return "an integer";
  }
  return "";
}

std::string accepted_in_full(const setting& row) {
  std::string text = accepted_text(row);
  if (row.kind == setting_kind::number && row.lo == 0 && !row.zero_means.empty()) {
    text += cat(" (0: ", row.zero_means, ")");
  }
  return text;
}

std::string default_text(const setting& row) {
  return row.default_value.empty() ? std::string(row.default_note) : std::string(row.default_value);
}

}  // namespace knit_server

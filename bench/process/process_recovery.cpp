// knit-process-recovery: how fast a pool of process workers recovers when a child is killed
// under load, and which calls the death fails (docs/process-workers.md).
//
// A pool of T worker threads (--threads, default and only 1, below) with its process options
// in pool_options::process. C client threads, each an attached host (knit::pool_host) and so
// the caller of T children of its own through its ring, submit process calls back to back,
// one at a time: task "pid_after" spins ~task-us of CPU in the child, then answers the
// child's pid, so a client knows which child answered. A killer thread waits until every
// child has answered (C x T), then does K kills: each picks a live child (a child of this
// process named knit-proc-N in /proc/PID/comm, not a zombie, that has answered), SIGKILLs
// it, and waits for the first call to succeed on a pid never seen before: its replacement,
// or with --spare the spare that takes over (the line "alive at the kill" tells them
// apart). Recovery = that call's completion (its handler running on its client thread) minus
// the kill. Then a gap, and the next kill.
// Why one child per client (T = 1): a client calls one at a time, so with T > 1 children its
// calls go to a live one and a killed one's replacement is never needed (it waits in its
// box): the first new pid to answer would then be a child up long before the kill, and the
// figure no recovery at all (refused: exit 2).
// Calls that failed between a kill and the next one are that kill's.
//
// Prints: the run's length, the cores it used and the foreign load (other processes' CPU over
// the run, /proc/stat less this process and its children), the kills, recovery median / p90
// / max (ms), failed calls per kill (mean, max, and how many kills failed 0, 1, 2+ calls),
// calls ok, knit::current_process_stats() at the end,
// and the checks: no zombie while running, no child after the pool is gone, and the fd count
// at the end against the start. Exits 1 if a check fails or a replacement never answers.
//
// The crash-loop policy would back the respawns off after 5 kills of one worker in 10 s;
// this measures the respawn itself, so crash_loop_crashes is set to 1000 unless
// --library-crash-loop keeps the library's defaults.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "knit/pool.hpp"
#include "knit/pool_host.hpp"
#include "knit/process.hpp"
// The /proc readers the process tests use (fds, children, their state and name).
#include "process/process_helpers.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

struct settings {
  int kills = 100;
  unsigned clients = 4;
  long task_us = 1000;
  long gap_ms = 20;
  bool library_crash_loop = false;
  // Each kill lands on an idle child: the clients hold off, the kill waits until no call is
  // in flight, and they go on once the replacement is up (children_live back to what it was), so
  // the first call on the replacement shows whether a call after a recovery pays a spawn.
  bool idle_kills = false;
  // process_options::spare_child: each worker keeps a spare child up, which replaces the
  // killed one with no spawn on the way to the next answer.
  bool spare = false;
  // Each child sleeps this long before worker_main (its handshake): a slower spawn, as on a
  // machine where starting a process costs more (0 = as fast as this machine spawns).
  long slow_start_ms = 0;
  bool per_kill = false;  // one line per kill
  unsigned threads = 1;   // pool worker threads: the children each client calls
  unsigned children = 0;  // the children calls go to: clients x threads
};

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: knit-process-recovery [--kills K] [--clients C] [--task-us U] "
               "[--gap-ms G] [--library-crash-loop] [--idle-kills] [--spare] [--slow-start-ms S] "
               "[--per-kill] [--threads T]\n"
               "  A pool under C client threads (default 4), each a host calling T children of\n"
               "  its own (T = --threads, the pool's worker threads: only 1, since with more a\n"
               "  client's calls go to a live child and no recovery is measured), calling a\n"
               "  task that spins U us (default 1000) and answers its pid; K kills (default\n"
               "  100, 1..999) of a live child by SIGKILL, G ms apart (default 20); prints the\n"
               "  recovery (kill -> first answer from the replacement) and the failed calls\n"
               "  per kill. --library-crash-loop: keep the crash-loop backoff (5 crashes in\n"
               "  10 s), which the default turns off (crash_loop_crashes = 1000).\n"
               "  --idle-kills: the clients pause for each kill (no call in flight) and go on\n"
               "  once the replacement is up: recovery is then kill -> replacement up (with\n"
               "  --spare, already up: kill -> the killed one reaped), and\n"
               "  the first call on the replacement's latency says whether it paid a spawn.\n"
               "  --spare: process_options::spare_child (a spare child per worker, up and\n"
               "  idle, takes over from the killed one; a new spare follows).\n"
               "  --slow-start-ms S: each child sleeps S ms (0..1000) before its handshake,\n"
               "  standing in for a machine whose process start is slower.\n"
               "  --per-kill: a line per kill (its pid, recovery, the pid that answered).\n");
}

std::optional<long> number(const char* text, long low, long high) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < low || v > high) return std::nullopt;
  return v;
}

// Parses argv into `s`; returns 0 to run, else the exit code (2 bad usage, 0 after --help).
int parse(int argc, char** argv, settings& s) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return -1;
    }
    if (a == "--library-crash-loop") {
      s.library_crash_loop = true;
      continue;
    }
    if (a == "--idle-kills") {
      s.idle_kills = true;
      continue;
    }
    if (a == "--per-kill") {
      s.per_kill = true;
      continue;
    }
    if (a == "--spare") {
      s.spare = true;
      continue;
    }
    const char* v = i + 1 < argc ? argv[++i] : "";
    std::optional<long> n;
    if (a == "--kills" && (n = number(v, 1, 999))) {
      s.kills = static_cast<int>(*n);
    } else if (a == "--clients" && (n = number(v, 1, 15))) {
      s.clients = static_cast<unsigned>(*n);
    } else if (a == "--task-us" && (n = number(v, 0, 1'000'000))) {
      s.task_us = *n;
    } else if (a == "--gap-ms" && (n = number(v, 0, 10'000))) {
      s.gap_ms = *n;
    } else if (a == "--threads" && (n = number(v, 1, 8))) {
      s.threads = static_cast<unsigned>(*n);
    } else if (a == "--slow-start-ms" && (n = number(v, 0, 1000))) {
      s.slow_start_ms = *n;
    } else {
      std::fprintf(stderr, "knit-process-recovery: bad option or value: %s %s\n", a.data(), v);
      usage(stderr);
      return 2;
    }
  }
  return 0;
}

// CPU ticks: busy on the whole machine (/proc/stat), and this process's own with its reaped
// children (/proc/self/stat utime stime cutime cstime). Their difference over the run is
// the foreign load: other processes' work beside the measurement.
struct cpu_ticks {
  long long machine_busy = 0, own = 0;
};
cpu_ticks read_ticks() {
  cpu_ticks t;
  std::ifstream stat("/proc/stat");
  std::string cpu;
  long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  t.machine_busy = user + nice + system + irq + softirq + steal;
  std::ifstream self("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(self)), std::istreambuf_iterator<char>());
  std::istringstream rest(text.substr(text.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 17; ++i) {
    rest >> field;
    if (i >= 14) t.own += std::atoll(field.c_str());  // utime stime cutime cstime
  }
  return t;
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

// What the clients saw, shared with the killer.
struct observations {
  std::mutex m;
  std::condition_variable cv;
  std::set<int> seen;  // pids that answered
  struct arrival {
    int pid;
    clock_type::time_point submitted, at;
  };
  std::vector<arrival> arrivals;  // first answer of each pid, in order
  std::atomic<std::uint64_t> ok{0}, crashed{0}, other{0};
  std::string other_example;  // the first failure other than worker_crashed
  std::atomic<bool> stop{false};
  bool paused = false;               // under m: --idle-kills holds the clients off
  unsigned in_flight = 0;            // under m: calls submitted and not yet answered
  std::vector<double> latencies_ms;  // every call that succeeded, submit -> handler

  std::uint64_t failed() const { return crashed.load() + other.load(); }
};

void client(knit::pool& pool, observations& obs, const std::string& task_us) {
  knit::pool_host host(pool);
  std::vector<double> latencies_ms;
  while (!obs.stop.load(std::memory_order_relaxed)) {
    {
      std::unique_lock lock(obs.m);
      obs.cv.wait(lock, [&] { return !obs.paused || obs.stop.load(); });
      ++obs.in_flight;
    }
    std::optional<knit::result<std::string>> got;
    clock_type::time_point done_at;
    const clock_type::time_point submitted_at = clock_type::now();
    const auto ec =
        knit::submit_process(host, "pid_after", task_us, [&](knit::result<std::string> r) {
          done_at = clock_type::now();
          got.emplace(std::move(r));
        });
    if (ec) {
      obs.other.fetch_add(1);
      std::lock_guard lock(obs.m);
      if (obs.other_example.empty()) obs.other_example = "submit: " + ec.message();
      --obs.in_flight;
      obs.cv.notify_all();
      continue;
    }
    while (!got) {
      pollfd fd{host.completion_fd(), POLLIN, 0};
      ::poll(&fd, 1, 100);
      host.drain();
    }
    {
      std::lock_guard lock(obs.m);
      --obs.in_flight;
      obs.cv.notify_all();
    }
    if (got->ok()) {
      obs.ok.fetch_add(1, std::memory_order_relaxed);
      latencies_ms.push_back(
          std::chrono::duration<double, std::milli>(done_at - submitted_at).count());
      const int pid = std::atoi(got->value().c_str());
      std::lock_guard lock(obs.m);
      if (obs.seen.insert(pid).second) {
        obs.arrivals.push_back({pid, submitted_at, done_at});
        obs.cv.notify_all();
      }
    } else if (got->error() == knit::errc::worker_crashed) {
      obs.crashed.fetch_add(1);
    } else {
      obs.other.fetch_add(1);
      std::lock_guard lock(obs.m);
      if (obs.other_example.empty()) obs.other_example = knit::failure_message(*got);
    }
  }
  std::lock_guard lock(obs.m);
  obs.latencies_ms.insert(obs.latencies_ms.end(), latencies_ms.begin(), latencies_ms.end());
}

struct kill_record {
  double recovery_ms;
  std::uint64_t failed;
  // The first call the replacement answered: its own latency (submit -> handler), and when
  // it was submitted, counted from the kill (negative: before the kill, sent to the killed
  // child and sent again to its replacement: calls_resent).
  double first_latency_ms;
  double first_submitted_ms;
  int killed_pid;
  int answered_pid;      // the first pid never seen before to answer after the kill
  bool answered_was_up;  // it was alive at the kill (a spare, or a child not yet seen)
};

// A live child that has answered: named knit-proc-N, not a zombie, its pid seen.
std::optional<int> pick_child(observations& obs, std::mt19937& rng) {
  std::vector<int> live;
  for (const knit_test::child_info& c : knit_test::children_of_this_process()) {
    if (c.state == 'Z' || knit_test::process_comm(c.pid).rfind("knit-proc-", 0) != 0) continue;
    std::lock_guard lock(obs.m);
    if (obs.seen.count(c.pid)) live.push_back(c.pid);
  }
  if (live.empty()) return std::nullopt;
  return live[std::uniform_int_distribution<std::size_t>(0, live.size() - 1)(rng)];
}

// The kills; false if a child or a replacement did not show up within 30 s.
bool killer(const settings& s, observations& obs, std::vector<kill_record>& out) {
  std::mt19937 rng(16);
  {
    // Every child answers before the first kill, so a new pid is a replacement (or a spare).
    std::unique_lock lock(obs.m);
    if (!obs.cv.wait_for(lock, std::chrono::seconds(30),
                         [&] { return obs.seen.size() >= s.children; })) {
      std::fprintf(stderr, "knit-process-recovery: the %u children never all answered\n",
                   s.children);
      return false;
    }
  }
  for (int i = 0; i < s.kills; ++i) {
    std::optional<int> pid;
    const auto look_until = clock_type::now() + std::chrono::seconds(30);
    while (!(pid = pick_child(obs, rng))) {
      if (clock_type::now() > look_until) {
        std::fprintf(stderr, "knit-process-recovery: kill %d: no live child found\n", i);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const std::uint64_t failed_before = obs.failed();
    std::size_t arrivals_before;
    if (s.idle_kills) {
      std::unique_lock lock(obs.m);
      obs.paused = true;
      if (!obs.cv.wait_for(lock, std::chrono::seconds(30), [&] { return obs.in_flight == 0; })) {
        std::fprintf(stderr, "knit-process-recovery: kill %d: calls still in flight\n", i);
        return false;
      }
    }
    {
      std::lock_guard lock(obs.m);
      arrivals_before = obs.arrivals.size();
    }
    // The workers alive at the kill: the first new pid to answer is told apart as one that
    // was up already (a spare; or, before every child has answered, one not seen yet).
    std::set<int> alive_at_kill;
    for (const knit_test::child_info& c : knit_test::children_of_this_process()) {
      if (c.state != 'Z') alive_at_kill.insert(c.pid);
    }
    const knit::process_stats before_kill = knit::current_process_stats();
    const std::uint64_t started_before = before_kill.children_started;
    const auto killed_at = clock_type::now();
    ::kill(*pid, SIGKILL);
    clock_type::time_point replaced_at, first_submitted;
    int answered = 0;
    double up_ms = 0;
    if (s.idle_kills) {
      // Up: started (handshaken) and the killed one reaped, with no call made.
      const auto until = clock_type::now() + std::chrono::seconds(30);
      for (;;) {
        const knit::process_stats st = knit::current_process_stats();
        // With a spare the replacement is up before the kill (the spare, taken by the next
        // call): up once the killed one is reaped (gone from /proc).
        if (s.spare ? knit_test::process_state(*pid) == 0
                    : st.children_started > started_before &&
                          st.children_live == before_kill.children_live) {
          break;
        }
        if (clock_type::now() > until) {
          std::fprintf(stderr, "knit-process-recovery: kill %d: no replacement started\n", i);
          return false;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      up_ms = std::chrono::duration<double, std::milli>(clock_type::now() - killed_at).count();
      std::lock_guard lock(obs.m);
      obs.paused = false;
      obs.cv.notify_all();
    }
    {
      std::unique_lock lock(obs.m);
      if (!obs.cv.wait_for(lock, std::chrono::seconds(30),
                           [&] { return obs.arrivals.size() > arrivals_before; })) {
        std::fprintf(stderr, "knit-process-recovery: kill %d (pid %d): no replacement answered\n",
                     i, *pid);
        return false;
      }
      replaced_at = obs.arrivals[arrivals_before].at;
      first_submitted = obs.arrivals[arrivals_before].submitted;
      answered = obs.arrivals[arrivals_before].pid;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(s.gap_ms));
    using ms = std::chrono::duration<double, std::milli>;
    out.push_back({s.idle_kills ? up_ms : ms(replaced_at - killed_at).count(),
                   obs.failed() - failed_before, ms(replaced_at - first_submitted).count(),
                   ms(first_submitted - killed_at).count(), *pid, answered,
                   alive_at_kill.contains(answered)});
  }
  return true;
}

double nearest_rank(const std::vector<double>& sorted, double p) {
  std::size_t rank = static_cast<std::size_t>(p * static_cast<double>(sorted.size()) + 0.999999);
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

// The open fds, once they hold still: the starter ends a pool's children (and those of a
// process_workers) on its own thread after the destructor returns, so their fds close a
// moment later (with --spare, 4 still open straight after the pool in 1 of 3 runs). Counted
// once no child of this process is left and the count is the same 50 ms apart; at most 2 s.
std::size_t settled_fd_count() {
  const auto until = clock_type::now() + std::chrono::seconds(2);
  std::size_t count = knit_test::open_fd_count();
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const std::size_t again = knit_test::open_fd_count();
    if ((again == count && knit_test::children_of_this_process().empty()) ||
        clock_type::now() > until) {
      return again;
    }
    count = again;
  }
}

}  // namespace

int main(int argc, char** argv) {
  knit::register_process_task("pid_after", [](std::string_view in) {
    // Wall-clock spin: the child holds its CPU for the call, as a render would.
    // `in` is a view of the request arena, not NUL-terminated.
    const auto until = clock_type::now() + std::chrono::microseconds(std::stol(std::string(in)));
    while (clock_type::now() < until) {
    }
    return std::to_string(::getpid());
  });
  // --slow-start-ms reaches the children through the environment they inherit (the
  // marker is the argv knit starts a child with).
  const char* slow_ms = std::getenv("KNIT_RECOVERY_SLOW_START_MS");
  if (slow_ms && argc > 1 && std::string_view(argv[1]) == "--knit-process-worker") {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atol(slow_ms)));
  }
  if (knit::worker_main(argc, argv)) return 0;
  settings s;
  if (const int rc = parse(argc, argv, s)) return rc < 0 ? 0 : rc;
  if (s.slow_start_ms > 0) {
    ::setenv("KNIT_RECOVERY_SLOW_START_MS", std::to_string(s.slow_start_ms).c_str(), 1);
  }

  const std::string load_start = load_average();
  const cpu_ticks ticks_start = read_ticks();
  if (s.threads > 1) {
    std::fprintf(stderr,
                 "knit-process-recovery: --threads %u: each client would call %u children of "
                 "its own one call at a time, so a killed child's replacement is never needed "
                 "and no recovery is measured; use --threads 1\n",
                 s.threads, s.threads);
    return 2;
  }
  s.children = s.clients * s.threads;
  // The starter's eventfd lives as long as the process (src/process/starter.cpp): one worker
  // started and ended first, so it is in the count at the start as at the end.
  {
    knit::pool_options warm_options;
    warm_options.threads = 1;
    knit::pool warm_pool(warm_options);
    knit::process_workers warm(warm_pool);
  }
  const std::size_t fds_start = settled_fd_count();

  observations obs;
  std::vector<kill_record> kills;
  bool kills_ok = false;
  std::size_t zombies_running = 0;
  const auto t0 = clock_type::now();
  {
    knit::pool_options options;
    options.threads = s.threads;
    if (!s.library_crash_loop) options.process.crash_loop_crashes = 1000;
    options.process.spare_child = s.spare;
    knit::pool pool(options);
    const std::string task_us = std::to_string(s.task_us);
    std::vector<std::thread> clients;
    for (unsigned i = 0; i < s.clients; ++i) {
      clients.emplace_back([&] { client(pool, obs, task_us); });
    }
    std::atomic<bool> killer_done{false};
    std::thread killer_thread([&] {
      kills_ok = killer(s, obs, kills);
      killer_done = true;
    });
    // The builder's duty: drain the pool while its clients run (stuck workers are replaced
    // here; nothing of its own is pending).
    while (!killer_done) {
      pollfd fd{pool.completion_fd(), POLLIN, 0};
      ::poll(&fd, 1, 20);
      pool.drain();
    }
    killer_thread.join();
    {
      std::lock_guard lock(obs.m);
      obs.stop = true;
      obs.cv.notify_all();
    }
    for (std::thread& t : clients) t.join();
    for (const knit_test::child_info& c : knit_test::children_of_this_process()) {
      zombies_running += c.state == 'Z';
    }
  }
  const double seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
  const cpu_ticks ticks_end = read_ticks();
  const double tick_hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double foreign_cores =
      static_cast<double>((ticks_end.machine_busy - ticks_start.machine_busy) -
                          (ticks_end.own - ticks_start.own)) /
      tick_hz / seconds;
  const double own_cores = static_cast<double>(ticks_end.own - ticks_start.own) / tick_hz / seconds;
  const knit::process_stats st = knit::current_process_stats();
  const std::size_t children_after = knit_test::children_of_this_process().size();
  const std::size_t fds_end = settled_fd_count();

  std::vector<double> recovery, first_latency, first_submitted;
  std::uint64_t failed_total = 0, failed_max = 0;
  std::map<std::uint64_t, int> by_failed;
  for (const kill_record& k : kills) {
    recovery.push_back(k.recovery_ms);
    first_latency.push_back(k.first_latency_ms);
    first_submitted.push_back(k.first_submitted_ms);
    failed_total += k.failed;
    failed_max = std::max(failed_max, k.failed);
    ++by_failed[std::min<std::uint64_t>(k.failed, 2)];
  }
  std::sort(recovery.begin(), recovery.end());
  std::sort(first_latency.begin(), first_latency.end());
  std::sort(first_submitted.begin(), first_submitted.end());
  std::sort(obs.latencies_ms.begin(), obs.latencies_ms.end());

  std::printf(
      "knit-process-recovery: %u pool worker thread(s), %u clients, task %ld us, gap %ld ms, "
      "crash loop %s%s; %s; child start slowed by %ld ms\n",
      s.threads, s.clients, s.task_us, s.gap_ms,
      s.idle_kills ? "idle kills (kill -> replacement up); " : "",
      s.library_crash_loop ? "library defaults (5 in 10 s, backoff)" : "off (1000)",
      s.spare ? "spare child per worker" : "no spare", s.slow_start_ms);
  std::printf(
      "%.1f s; cores busy: %.2f this run, %.2f foreign (of %ld); load average at start "
      "%s, at end %s\n",
      seconds, own_cores, foreign_cores, ::sysconf(_SC_NPROCESSORS_ONLN), load_start.c_str(),
      load_average().c_str());
  std::printf("kills: %zu of %d\n", kills.size(), s.kills);
  if (s.per_kill) {
    for (std::size_t i = 0; i < kills.size(); ++i) {
      const kill_record& k = kills[i];
      std::printf("kill %zu: pid %d, recovery %.2f ms, answered by pid %d (%s at the kill)\n", i,
                  k.killed_pid, k.recovery_ms, k.answered_pid,
                  k.answered_was_up ? "alive" : "not alive");
    }
  }
  const auto answered_up = std::count_if(kills.begin(), kills.end(),
                                         [](const kill_record& k) { return k.answered_was_up; });
  std::printf("first new pid to answer after a kill was alive at the kill: %td of %zu kills%s\n",
              answered_up, kills.size(),
              s.spare ? " (the spare)" : " (a child not yet seen: not a replacement)");
  if (!recovery.empty()) {
    std::printf("recovery ms: median %.2f  p90 %.2f  max %.2f  (min %.2f)\n",
                nearest_rank(recovery, 0.5), nearest_rank(recovery, 0.9), recovery.back(),
                recovery.front());
    std::printf(
        "failed calls per kill: mean %.2f  max %llu  (kills failing 0: %d, 1: %d, 2+: %d)\n",
        static_cast<double>(failed_total) / static_cast<double>(kills.size()),
        static_cast<unsigned long long>(failed_max), by_failed[0], by_failed[1], by_failed[2]);
    // A call that paid a spawn would show the spawn (~3 ms) on top of a normal call.
    std::printf(
        "first call on the replacement: latency ms median %.2f  p90 %.2f  max %.2f; "
        "submitted ms after the kill: median %.2f  min %.2f  max %.2f\n",
        nearest_rank(first_latency, 0.5), nearest_rank(first_latency, 0.9), first_latency.back(),
        nearest_rank(first_submitted, 0.5), first_submitted.front(), first_submitted.back());
  }
  if (!obs.latencies_ms.empty()) {
    std::printf("every call that succeeded: latency ms median %.2f  p90 %.2f  p99 %.2f  max %.2f\n",
                nearest_rank(obs.latencies_ms, 0.5), nearest_rank(obs.latencies_ms, 0.9),
                nearest_rank(obs.latencies_ms, 0.99), obs.latencies_ms.back());
  }
  std::printf("calls ok: %llu  failed worker_crashed: %llu  failed otherwise: %llu%s%s\n",
              static_cast<unsigned long long>(obs.ok.load()),
              static_cast<unsigned long long>(obs.crashed.load()),
              static_cast<unsigned long long>(obs.other.load()),
              obs.other_example.empty() ? "" : "; first: ", obs.other_example.c_str());
  std::printf(
      "process_stats: children_started %llu  children_live %llu  crashes %llu  "
      "degraded_workers %llu  calls %llu  calls_resent %llu  calls_moved %llu  "
      "protocol_kills %llu\n",
      static_cast<unsigned long long>(st.children_started),
      static_cast<unsigned long long>(st.children_live),
      static_cast<unsigned long long>(st.crashes),
      static_cast<unsigned long long>(st.degraded_workers),
      static_cast<unsigned long long>(st.calls), static_cast<unsigned long long>(st.calls_resent),
      static_cast<unsigned long long>(st.calls_moved),
      static_cast<unsigned long long>(st.protocol_kills));
  const bool clean = zombies_running == 0 && children_after == 0 && fds_end == fds_start;
  std::printf(
      "checks: zombies while running %zu, children after the pool %zu, fds %zu at start "
      "%zu at end: %s\n",
      zombies_running, children_after, fds_start, fds_end, clean ? "ok" : "FAILED");
  return kills_ok && clean ? 0 : 1;
}

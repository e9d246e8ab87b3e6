// KNIT_ISOLATION=process end to end: /ssr and /jwt answered byte for byte as with threads, by
// children of the server named knit-proc-N; a worker process that crashes fails its own
// call with 500 (and one stderr line naming it) while /ping and later calls are served; a stuck
// call gets 504 and its worker process is killed; a crash loop turns /readyz to "degraded"; SIGTERM
// leaves no worker process behind. No test asserts on timing: what a test waits for is an event (a
// child's CPU time growing, a process gone), and deadlines only keep a broken server from hanging.
#include <dirent.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/json.hpp>

#include "http_client.hpp"
#include "process/process_helpers.hpp"  // children_of, process_comm
#include "server_fixture.hpp"
#include "server_process.hpp"

namespace knit_test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

struct proc_info {
  pid_t pid = 0;
  pid_t ppid = 0;
  char state = 0;
  std::uint64_t cpu_ticks = 0;  // utime + stime
};

// /proc/PID/stat, or nullopt when the process is gone.
std::optional<proc_info> read_proc(pid_t pid) {
  const std::string text = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  const auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(text.substr(close + 2));
  proc_info p;
  p.pid = pid;
  rest >> p.state >> p.ppid;
  std::string skip;
  for (int field = 5; field <= 13; ++field) rest >> skip;  // pgrp .. cmajflt
  std::uint64_t utime = 0, stime = 0;
  rest >> utime >> stime;
  p.cpu_ticks = utime + stime;
  return p;
}

// The live (not zombie) children of `parent`.
std::vector<pid_t> live_children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const child_info& c : children_of(parent)) {
    if (c.state != 'Z') out.push_back(c.pid);
  }
  return out;
}

// Waits until `parent` has exactly one live child and returns it (0 after 20 s).
pid_t the_only_child(pid_t parent) {
  const auto limit = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < limit) {
    const std::vector<pid_t> kids = live_children_of(parent);
    if (kids.size() == 1) return kids[0];
    std::this_thread::sleep_for(5ms);
  }
  return 0;
}

// Waits until `pid` no longer runs as a child of `parent` (gone, reaped, or a zombie of the
// init that adopted it after the server's exit). False after 20 s.
bool ends(pid_t pid, pid_t parent) {
  const auto limit = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < limit) {
    const auto p = read_proc(pid);
    if (!p || p->state == 'Z' || p->ppid != parent) return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

// True once `pid` is reaped (gone from /proc, not a zombie) or no longer `parent`'s child;
// false after 20 s. knit-server's starter reaps a worker process the moment it dies, and
// only a reaped one is one every event loop knows to be dead (a zombie may still be sent a
// call, which then fails with it).
bool reaped(pid_t pid, pid_t parent) {
  const auto limit = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < limit) {
    const auto p = read_proc(pid);
    if (!p || p->ppid != parent) return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

// Waits until `pid` has spent `ticks` more clock ticks of CPU than `from`: it is running a
// task (an idle worker process sleeps in poll and spends none). False after 60 s.
bool burns_cpu(pid_t pid, std::uint64_t from, std::uint64_t ticks) {
  const auto limit = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < limit) {
    const auto p = read_proc(pid);
    if (!p) return false;
    if (p->cpu_ticks >= from + ticks) return true;
    std::this_thread::sleep_for(2ms);
  }
  return false;
}

std::int64_t workers_field(const json::object& stats, const char* name) {
  return stats.at("workers").at(name).as_int64();
}

env_map process_env(env_map more = {}) {
  more.emplace("KNIT_MODE", "pooled");
  more.emplace("KNIT_ISOLATION", "process");
  // No spare (knit-server's default is one per worker) unless a test asks: these tests
  // count the worker processes, and a spare would be one more.
  more.emplace("KNIT_WORKER_SPARE", "0");
  return more;
}

struct exchange {
  const char* method;
  const char* target;
  std::string body;
};

// A body at the size limit (64 KiB) whose name is all apostrophes: the largest /ssr answer
// a body can ask for (each one escaped to "&#x27;", the name written twice).
std::string largest_ssr_body() {
  const std::string head = R"({"name":")";
  const std::string tail = R"("})";
  return head + std::string(64 * 1024 - head.size() - tail.size(), '\'') + tail;
}

TEST(process_isolation, answers_byte_for_byte_as_thread_isolation_from_children_named_knit_proc) {
  server_process threads(env_map{{"KNIT_MODE", "pooled"}, {"KNIT_THREADS", "2"}});
  server_process processes(process_env({{"KNIT_THREADS", "2"}}));
  ASSERT_TRUE(threads.wait_listening()) << threads.stderr_text();
  ASSERT_TRUE(processes.wait_listening()) << processes.stderr_text();
  EXPECT_NE(processes.stdout_seen().find("mode: pooled, isolation process"), std::string::npos)
      << processes.stdout_seen();
  // The banner says which layers confine the workers: the strict sandbox by default, and
  // here (no service manager refusing them) the namespaces and an undumpable host; a TSan
  // build spawns without namespaces and says why.
#if defined(__SANITIZE_THREAD__)
  const std::string confinement = "namespaces off (not in a ThreadSanitizer build";
#else
  const std::string confinement = "namespaces on (user, pid, mount, net), host undumpable";
#endif
  EXPECT_NE(processes.stdout_seen().find(
                "sandbox: strict (seccomp filter, no capabilities, own stdio), " + confinement),
            std::string::npos)
      << processes.stdout_seen();
  const exchange exchanges[] = {
      {"POST", "/ssr", kSsrBody},
      {"POST", "/ssr", "not json"},
      {"POST", "/ssr", std::string(60 * 1024, 'x')},
      {"POST", "/ssr", largest_ssr_body()},
      {"POST", "/jwt", kJwtBody},
      {"POST", "/jwt", R"({"user":{}})"},  // 400 Bad request
      {"POST", "/jwt", "not json"},
      {"POST", "/jwt", std::string(64 * 1024 + 1, 'x')},  // 413, before any worker
  };
  connection to_threads(threads.port());
  connection to_processes(processes.port());
  for (const exchange& e : exchanges) {
    auto expected = to_threads.request(e.method, e.target, e.body);
    auto got = to_processes.request(e.method, e.target, e.body);
    ASSERT_TRUE(expected) << e.target << ' ' << e.body.size();
    ASSERT_TRUE(got) << e.target << ' ' << e.body.size();
    EXPECT_EQ(without_clock(*got), without_clock(*expected)) << e.target << ' ' << e.body.size();
    EXPECT_EQ(got->body.size(), expected->body.size()) << e.target;
  }
  // 413 closes the connection: the last exchange is the last on these.
  const std::vector<pid_t> kids = live_children_of(processes.pid());
  ASSERT_FALSE(kids.empty());
  EXPECT_LE(kids.size(), 2U);  // one per pool worker that took a call
  for (pid_t kid : kids) {
    EXPECT_EQ(process_comm(kid).rfind("knit-proc-", 0), 0U) << process_comm(kid);
  }
  EXPECT_TRUE(live_children_of(threads.pid()).empty());
  const json::object stats = read_stats(processes);
  EXPECT_EQ(stats.at("isolation").as_string(), "process");
  EXPECT_EQ(workers_field(stats, "crashed"), 0);
  EXPECT_EQ(workers_field(stats, "live"), static_cast<std::int64_t>(kids.size()));
  EXPECT_EQ(read_stats(threads).at("isolation").as_string(), "thread");
  EXPECT_EQ(threads.stop(), 0) << threads.stderr_text();
  EXPECT_EQ(processes.stop(), 0) << processes.stderr_text();
  for (pid_t kid : kids) EXPECT_TRUE(ends(kid, processes.pid())) << kid;
}

TEST(process_isolation, a_worker_that_crashes_fails_its_call_with_500_and_the_server_lives) {
  server_process server(process_env({{"KNIT_THREADS", "1"}, {"KNIT_SSR_COST_US", "5000000"}}));
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  {
    connection c(server.port());
    ASSERT_TRUE(c.request("POST", "/jwt", kJwtBody));  // starts the one worker process
  }
  const pid_t worker = the_only_child(server.pid());
  ASSERT_NE(worker, 0);
  const auto before = read_proc(worker);
  ASSERT_TRUE(before);

  std::optional<http_response> crashed;
  std::thread slow([&] {
    connection c(server.port(), 120s);
    crashed = c.request("POST", "/ssr", kSsrBody);
  });
  // 5 ticks (50 ms) of CPU more than at rest: the worker process is inside the 5 s task.
  ASSERT_TRUE(burns_cpu(worker, before->cpu_ticks, 5));
  // SIGKILL as the crash: a sanitizer build's own SIGSEGV handler would turn a SIGSEGV into a
  // report and an exit code; SIGKILL ends the process the same way in every build.
  ::kill(worker, SIGKILL);
  slow.join();
  ASSERT_TRUE(crashed);
  EXPECT_EQ(crashed->status, 500);
  EXPECT_EQ(crashed->body, "Internal Server Error: the worker process running the task crashed");
  EXPECT_TRUE(ends(worker, server.pid()));
  // One stderr line saying which process died and how (written before the 500 was sent).
  const std::string log = server.stderr_text();
  EXPECT_NE(log.find("(pid " + std::to_string(worker) + ", knit-proc-"), std::string::npos) << log;
  EXPECT_NE(log.find("killed by signal 9 (SIGKILL)"), std::string::npos) << log;

  {
    connection c(server.port());
    const auto ping = c.request("GET", "/ping");
    ASSERT_TRUE(ping);
    EXPECT_EQ(ping->status, 200);
    const auto again = c.request("POST", "/jwt", kJwtBody);  // on a replacement
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 200);
    const auto metrics = c.request("GET", "/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_NE(metrics->body.find("knit_worker_process_crashes_total 1\n"), std::string::npos)
        << metrics->body;
  }
  const pid_t replacement = the_only_child(server.pid());
  EXPECT_NE(replacement, 0);
  EXPECT_NE(replacement, worker);
  const json::object stats = read_stats(server);
  EXPECT_EQ(workers_field(stats, "crashed"), 1);
  EXPECT_EQ(workers_field(stats, "respawned"), 1);
  EXPECT_EQ(workers_field(stats, "killed"), 0);
  EXPECT_EQ(workers_field(stats, "degraded"), 0);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
  EXPECT_TRUE(ends(replacement, server.pid()));
}

TEST(process_isolation, a_stuck_call_gets_504_and_its_worker_process_is_killed) {
  server_process server(process_env(
      {{"KNIT_THREADS", "1"}, {"KNIT_SSR_COST_US", "10000000"}, {"KNIT_STUCK_MS", "300"}}));
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection c(server.port(), 60s);
  ASSERT_TRUE(c.request("POST", "/jwt", kJwtBody));
  const pid_t worker = the_only_child(server.pid());
  ASSERT_NE(worker, 0);
  const auto stuck = c.request("POST", "/ssr", kSsrBody);
  ASSERT_TRUE(stuck);
  EXPECT_EQ(stuck->status, 504);
  // Killed, not left to burn its 10 s: gone long before the task could have ended.
  EXPECT_TRUE(ends(worker, server.pid()));
  connection fresh(server.port());
  const auto next = fresh.request("POST", "/jwt", kJwtBody);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 200);
  const json::object stats = stats_where(
      server, [](const json::object& s) { return s.at("workers").at("killed").as_int64() == 1; });
  EXPECT_EQ(workers_field(stats, "crashed"), 0);
  EXPECT_EQ(workers_field(stats, "respawned"), 1);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

// knit's default crash loop: 5 crashes of one worker's processes within 10 s. Each round
// kills the idle worker process and waits for its reap; the next call then finds it dead
// (no call fails: none was running) and takes the replacement. Then, with no traffic, the
// degraded state ends by itself once the window passes.
TEST(process_isolation, readyz_says_degraded_while_the_workers_crash_loop_then_clears) {
  server_process server(process_env({{"KNIT_THREADS", "1"}}));
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection c(server.port());
  for (int round = 0; round < 5; ++round) {
    const auto res = c.request("POST", "/jwt", kJwtBody);
    ASSERT_TRUE(res) << round;
    EXPECT_EQ(res->status, 200) << round;
    const pid_t worker = the_only_child(server.pid());
    ASSERT_NE(worker, 0) << round;
    ::kill(worker, SIGKILL);
    ASSERT_TRUE(reaped(worker, server.pid())) << round;
  }
  const auto sixth = c.request("POST", "/jwt", kJwtBody);  // sees the 5th crash, backs off
  ASSERT_TRUE(sixth);
  EXPECT_EQ(sixth->status, 200);
  const auto ready = c.request("GET", "/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  EXPECT_EQ(ready->body, "degraded: workers crash-looping\n");
  const json::object stats = read_stats(server);
  EXPECT_EQ(workers_field(stats, "crashed"), 5);
  EXPECT_EQ(workers_field(stats, "degraded"), 1);
  // With no call made, ready again once the crash loop's window (10 s) has passed without
  // a new crash: /readyz asks nothing of the workers. Before, it said crash-looping for good.
  const auto clear_by = std::chrono::steady_clock::now() + std::chrono::seconds(25);
  std::optional<int> status;
  while (std::chrono::steady_clock::now() < clear_by) {
    connection probe(server.port());
    const auto again = probe.request("GET", "/readyz");
    ASSERT_TRUE(again);
    status = again->status;
    if (*status == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(status, 200) << "still degraded 25 s after the last crash";
  EXPECT_EQ(workers_field(read_stats(server), "degraded"), 0);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

// The children and their fd tables (/proc/PID/fd): each entry's link target.
std::vector<std::string> fd_targets(pid_t pid) {
  std::vector<std::string> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      char target[256] = {};
      const ssize_t n = ::readlink((dir + "/" + e->d_name).c_str(), target, sizeof target - 1);
      out.push_back(std::string(e->d_name) + " -> " + (n > 0 ? std::string(target, n) : "?"));
    }
    ::closedir(d);
  }
  return out;
}

// /proc/PID/status, "" when gone.
std::string proc_status(pid_t pid) {
  // A newline first, so every field, the first too, follows one.
  return std::string(1, '\n').append(read_proc_file("/proc/" + std::to_string(pid) + "/status"));
}

// The live children of `parent` named knit-proc-*. A read of /proc racing a child's
// death can fail (ESRCH, thrown by the stream): the caller's poll then just looks again.
std::vector<pid_t> worker_children(pid_t parent) {
  std::vector<pid_t> out;
  try {
    for (pid_t kid : live_children_of(parent)) {
      if (process_comm(kid).rfind("knit-proc-", 0) == 0) out.push_back(kid);
    }
  } catch (const std::exception&) {
    out.clear();
  }
  return out;
}

// Every worker process is started and handshaken before "listening on": with each start
// slowed by the test hook, both children of KNIT_THREADS=2 exist the moment the line
// appears, knit-stats counts them live, and the first /readyz already says ready.
TEST(process_isolation, every_worker_process_is_up_before_the_server_listens) {
  server_process server(
      process_env({{"KNIT_THREADS", "2"}, {"KNIT_TEST_WORKER_START_DELAY_MS", "300"}}));
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  const std::vector<pid_t> kids = worker_children(server.pid());
  EXPECT_EQ(kids.size(), 2U);
  // Sandboxed by default: a seccomp filter (mode 2) and no new privileges.
  for (pid_t kid : kids) {
    const std::string status = proc_status(kid);
    EXPECT_NE(status.find("\nSeccomp:\t2\n"), std::string::npos) << status;
    EXPECT_NE(status.find("\nNoNewPrivs:\t1\n"), std::string::npos) << status;
  }
  {
    connection c(server.port());
    const auto ready = c.request("GET", "/readyz");
    ASSERT_TRUE(ready);
    EXPECT_EQ(ready->status, 200) << ready->body;
  }
  const json::object stats = read_stats(server);
  EXPECT_EQ(workers_field(stats, "live"), 2);
  EXPECT_EQ(workers_field(stats, "respawned"), 0);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

// KNIT_WORKER_SANDBOX=off: no filter; a value it does not know: exit 2 naming it.
TEST(process_isolation, the_sandbox_is_off_only_when_asked) {
  server_process off(process_env({{"KNIT_THREADS", "1"}, {"KNIT_WORKER_SANDBOX", "off"}}));
  ASSERT_TRUE(off.wait_listening()) << off.stderr_text();
  const std::vector<pid_t> kids = worker_children(off.pid());
  ASSERT_EQ(kids.size(), 1U);
  const std::string status = proc_status(kids[0]);
  EXPECT_NE(status.find("\nSeccomp:\t0\n"), std::string::npos) << status;
  EXPECT_EQ(off.stop(), 0) << off.stderr_text();

  server_process bad(process_env({{"KNIT_WORKER_SANDBOX", "loose"}}));
  EXPECT_EQ(bad.wait_exit(), 2);
  EXPECT_NE(bad.stderr_text().find("KNIT_WORKER_SANDBOX"), std::string::npos) << bad.stderr_text();
}

// The spare (KNIT_WORKER_SPARE, on by default): after the first heavy request a spare worker
// process is up beside the one taken; a crash mid-call fails that call with 500, the spare
// (alive before the crash) takes the next, and a new spare follows. A value it does not
// know: exit 2 naming it.
TEST(process_isolation, a_spare_worker_process_takes_over_from_a_crashed_one) {
  env_map env = process_env({{"KNIT_THREADS", "1"}, {"KNIT_SSR_COST_US", "5000000"}});
  env.erase("KNIT_WORKER_SPARE");  // the default
  server_process server(env);
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  {
    connection c(server.port());
    ASSERT_TRUE(c.request("POST", "/jwt", kJwtBody));  // the worker takes its child
  }
  std::vector<pid_t> kids;
  const auto limit = std::chrono::steady_clock::now() + 20s;
  while ((kids = worker_children(server.pid())).size() != 2 &&
         std::chrono::steady_clock::now() < limit) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(kids.size(), 2U) << "no spare beside the worker process";
  std::vector<std::uint64_t> ticks;
  for (pid_t kid : kids) {
    const auto p = read_proc(kid);
    ASSERT_TRUE(p);
    ticks.push_back(p->cpu_ticks);
  }
  std::optional<http_response> crashed;
  std::thread slow([&] {
    connection c(server.port(), 120s);
    crashed = c.request("POST", "/ssr", kSsrBody);
  });
  // The one inside the 5 s task is the taken child; the other is the spare.
  pid_t busy = 0;
  const auto busy_limit = std::chrono::steady_clock::now() + 60s;
  while (busy == 0 && std::chrono::steady_clock::now() < busy_limit) {
    for (std::size_t i = 0; i < kids.size(); ++i) {
      const auto p = read_proc(kids[i]);
      if (p && p->cpu_ticks >= ticks[i] + 5) busy = kids[i];
    }
    std::this_thread::sleep_for(2ms);
  }
  ASSERT_NE(busy, 0) << "neither worker process ran the task";
  const pid_t spare = busy == kids[0] ? kids[1] : kids[0];
  ::kill(busy, SIGKILL);
  slow.join();
  ASSERT_TRUE(crashed);
  EXPECT_EQ(crashed->status, 500);
  {
    connection c(server.port());
    const auto again = c.request("POST", "/jwt", kJwtBody);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 200);
  }
  while ((kids = worker_children(server.pid())).size() != 2 &&
         std::chrono::steady_clock::now() < limit + 20s) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(kids.size(), 2U) << "no new spare";
  EXPECT_TRUE(std::find(kids.begin(), kids.end(), spare) != kids.end())
      << "the spare is gone: the call after the crash did not take it";
  EXPECT_TRUE(std::find(kids.begin(), kids.end(), busy) == kids.end());
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
  for (pid_t kid : kids) EXPECT_TRUE(ends(kid, server.pid()));

  server_process bad(process_env({{"KNIT_WORKER_SPARE", "yes"}}));
  EXPECT_EQ(bad.wait_exit(), 2);
  EXPECT_NE(bad.stderr_text().find("KNIT_WORKER_SPARE=\"yes\": expected 0 or 1"), std::string::npos)
      << bad.stderr_text();
}

// KNIT_PROCESS_HOST_RING chose the removed second process path: set to anything, exit 2
// naming it, before listening.
TEST(process_isolation, the_removed_host_ring_setting_stops_the_server) {
  for (const char* value : {"0", "1"}) {
    server_process bad(process_env({{"KNIT_PROCESS_HOST_RING", value}}));
    EXPECT_EQ(bad.wait_exit(), 2) << value;
    EXPECT_NE(bad.stderr_text().find("KNIT_PROCESS_HOST_RING=\"" + std::string(value) +
                                     "\": expected it unset"),
              std::string::npos)
        << bad.stderr_text();
  }
}

// KNIT_PROCESS_LANES takes 1 .. 32; anything else: exit 2 naming it, before listening.
TEST(process_isolation, a_lane_count_out_of_range_stops_the_server) {
  for (const char* value : {"0", "33", "4x", "-1", "99999999999999999999"}) {
    server_process bad(process_env({{"KNIT_PROCESS_LANES", value}}));
    EXPECT_EQ(bad.wait_exit(), 2) << value;
    EXPECT_NE(bad.stderr_text().find(std::string("KNIT_PROCESS_LANES=\"") + value +
                                     "\": expected an integer from 1 to 32"),
              std::string::npos)
        << bad.stderr_text();
  }
}

// A worker process that cannot start: the server exits 1 before it listens, with one line
// naming the cause, and leaves no child behind.
TEST(process_isolation, a_worker_that_cannot_start_stops_the_server_before_it_listens) {
  server_process server(process_env({{"KNIT_THREADS", "2"}, {"KNIT_TEST_WORKER_EXIT", "7"}}));
  EXPECT_FALSE(server.wait_listening());
  const pid_t pid = server.pid();
  EXPECT_EQ(server.wait_exit(), 1);
  EXPECT_EQ(server.stdout_seen().find("listening on"), std::string::npos) << server.stdout_seen();
  const std::string log = server.stderr_text();
  const std::string line = "knit-server: cannot start the worker processes: ";
  EXPECT_NE(log.find(line), std::string::npos) << log;
  EXPECT_NE(log.find("exited with code 7 before its handshake"), std::string::npos) << log;
  EXPECT_EQ(log.find('\n'), log.size() - 1) << "one line: " << log;
  EXPECT_TRUE(children_of(pid).empty());
}

// A worker process killed while idle, with a client connected: its replacement is started
// without any request, and inherits neither the listening socket nor the connection: its fd
// table holds stdin/out/err and its own three (two eventfds, the host-alive pipe).
TEST(process_isolation, a_killed_worker_is_replaced_at_once_with_only_its_own_fds) {
  server_process server(process_env({{"KNIT_THREADS", "1"}}));
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  connection c(server.port());
  ASSERT_TRUE(c.request("GET", "/ping"));  // the connection is open in the server
  const pid_t worker = the_only_child(server.pid());
  ASSERT_NE(worker, 0);
  ::kill(worker, SIGKILL);
  pid_t replacement = 0;
  const auto limit = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < limit) {
    const std::vector<pid_t> kids = worker_children(server.pid());
    if (kids.size() == 1 && kids[0] != worker) {
      replacement = kids[0];
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_NE(replacement, 0) << "no replacement without a request";
  // Its handshake done (it closes the memfd before it): counted as a respawn.
  (void)stats_where(server, [](const json::object& s) {
    return s.at("workers").at("respawned").as_int64() == 1;
  });
  const std::vector<std::string> fds = fd_targets(replacement);
  int own = 0;
  for (const std::string& fd : fds) {
    EXPECT_EQ(fd.find("socket:"), std::string::npos) << fd;
    const bool std_fd = fd.rfind("0 ", 0) == 0 || fd.rfind("1 ", 0) == 0 || fd.rfind("2 ", 0) == 0;
    if (!std_fd) {
      ++own;
      EXPECT_TRUE(fd.find("anon_inode:[eventfd]") != std::string::npos ||
                  fd.find("pipe:") != std::string::npos)
          << fd;
    }
  }
  EXPECT_EQ(own, 3) << testing::PrintToString(fds);
  const auto jwt = c.request("POST", "/jwt", kJwtBody);
  ASSERT_TRUE(jwt);
  EXPECT_EQ(jwt->status, 200);
  EXPECT_EQ(workers_field(read_stats(server), "respawned"), 1);
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

// Each event loop calls worker processes of its own (the host ring: KNIT_THREADS of them per
// loop); every one of them ends with the server.
TEST(process_isolation, several_event_loops_call_worker_processes_that_end_with_the_server) {
  server_process server(process_env({{"KNIT_THREADS", "2"}, {"KNIT_HOSTS", "2"}}));
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  for (int i = 0; i < 20; ++i) {
    connection c(server.port());
    const auto res = c.request("POST", i % 2 ? "/jwt" : "/ssr", i % 2 ? kJwtBody : kSsrBody);
    ASSERT_TRUE(res) << i;
    EXPECT_EQ(res->status, 200) << i;
  }
  const std::vector<pid_t> kids = live_children_of(server.pid());
  EXPECT_GE(kids.size(), 1U);
  EXPECT_LE(kids.size(), 4U);  // 2 loops x 2
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
  for (pid_t kid : kids) EXPECT_TRUE(ends(kid, server.pid())) << kid;
}

}  // namespace
}  // namespace knit_test

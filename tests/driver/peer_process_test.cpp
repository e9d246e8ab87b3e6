// External peers: the process tree, and case_process as a peer, run against the fake server started
// as a shell command (start, socket identity, CPU of every process, stop), a command that
// never listens, one that exits, and one that ignores SIGTERM.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "driver/run/plan.hpp"
#include "driver/run/runner.hpp"
#include "driver/system/case_process.hpp"
#include "driver/system/cpu_sampler.hpp"
#include "driver/system/identity.hpp"
#include "driver/system/port.hpp"
#include "driver/system/process_tree.hpp"

namespace knit::bench {
namespace {

namespace fs = std::filesystem;

TEST(process_tree, ParsesStatWithAwkwardNames) {
  proc_entry p;
  ASSERT_TRUE(
      parse_proc_entry("4242 (a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 3 0 "
                       "987654 1000 10 1 2 3 4",
                       p));
  EXPECT_EQ(p.pid, 4242);
  EXPECT_EQ(p.ppid, 17);
  EXPECT_EQ(p.pgid, 4242);
  EXPECT_EQ(p.state, 'S');
  EXPECT_EQ(p.start_ticks, 987654u);
  EXPECT_FALSE(parse_proc_entry("12 (x) S 1 2", p));
}

TEST(process_tree, DescendantsAndGroupMembersNotZombies) {
  std::vector<proc_entry> all = {
      {1, 0, 1, 1, 'S'},        {100, 1, 100, 10, 'S'},  // root
      {103, 102, 100, 13, 'S'},                          // grandchild, listed before its parent
      {102, 100, 100, 12, 'S'}, {104, 1, 100, 14, 'S'},  // orphan still in root's group
      {105, 1, 105, 15, 'S'},                            // an unrelated process
      {106, 100, 100, 16, 'Z'},                          // a zombie child: nothing to measure
      {107, 104, 107, 17, 'R'},  // child of the orphan, in a group of its own
  };
  std::vector<pid_t> pids;
  for (const auto& p : process_tree(100, all)) pids.push_back(p.pid);
  EXPECT_EQ(pids, (std::vector<pid_t>{100, 103, 102, 104, 107}));
  EXPECT_TRUE(process_tree(999, all).empty());
}

TEST(process_tree, CpuDeltaCountsNewProcessesWhole) {
  tree_cpu_sample a, b;
  a.procs[1] = cpu_sample{1.0, 2.0, 0, 1};
  a.procs[2] = cpu_sample{5.0, 5.0, 0, 1};  // exits before b: its last slice is lost
  a.procs[3] = cpu_sample{7.0, 7.0, 0, 1};  // PID reused by a new process in b
  a.start_ticks = {{1, 10}, {2, 20}, {3, 30}};
  a.wall_s = 100;
  b.procs[1] = cpu_sample{1.5, 2.75, 0, 2};
  b.procs[3] = cpu_sample{0.25, 0.5, 0, 1};
  b.procs[4] = cpu_sample{0.5, 0.25, 0, 3};  // started in between
  b.start_ticks = {{1, 10}, {3, 31}, {4, 40}};
  b.wall_s = 102;
  cpu_usage d = tree_cpu_delta(a, b);
  EXPECT_DOUBLE_EQ(d.ticks_s, 0.5 + 0.25 + 0.5);
  ASSERT_TRUE(d.sched_s.has_value());
  EXPECT_DOUBLE_EQ(*d.sched_s, 0.75 + 0.5 + 0.25);
  EXPECT_DOUBLE_EQ(d.wall_s, 2);
  EXPECT_EQ(b.threads(), 6);
}

TEST(process_tree, SocketOwnerOverAGroupOfPids) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  EXPECT_TRUE(check_socket_owner(std::vector<pid_t>{1, ::getpid()}, port, "us").empty());
  auto problems = check_socket_owner(std::vector<pid_t>{::getppid()}, port, "peer x");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("does not belong to peer x"), std::string::npos) << problems[0];
  ::close(fd);
}

struct peer_box {
  fs::path dir;
  peer_box() {
    dir = fs::path(::testing::TempDir()) /
          ("knit-peer-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~peer_box() { fs::remove_all(dir); }
  process_options options(const std::string& command) const {
    process_options o;
    o.kind = server_kind::peer;
    o.name = "fake";
    o.port = pick_free_port();
    o.command = command;
    o.env = {{"PORT", std::to_string(o.port)}, {"HOST", o.host}};
    o.log_path = (dir / "peer.log").string();
    o.ready_timeout_s = 10;
    o.stop_grace_s = 5;
    return o;
  }
};

std::string fake() { return std::string("'") + KNIT_FAKE_SERVER + "'"; }

bool any_running(const std::vector<proc_entry>& procs) {
  for (const auto& p : procs)
    if (still_running(p)) return true;
  return false;
}

TEST(peer_process, StartsMeasuresTheWholeTreeAndStopsIt) {
  peer_box box;
  // A busy child beside the server: the tree's CPU must include it.
  process_options o = box.options("while :; do :; done & exec " + fake());
  case_process peer(o);
  ASSERT_GT(peer.pid(), 0);
  EXPECT_EQ(peer.argv(), (std::vector<std::string>{"/bin/sh", "-c", o.command}));
  auto tree = process_tree(peer.pid());
  ASSERT_GE(tree.size(), 2u);
  EXPECT_EQ(tree.front().pid, peer.pid());
  EXPECT_EQ(canonical_path(*read_exe(peer.pid())),
            canonical_path(KNIT_FAKE_SERVER));  // sh exec'd it
  EXPECT_EQ(read_environ(peer.pid())->at("PORT"), std::to_string(o.port));
  EXPECT_TRUE(tcp_connect_ok(o.host, o.port, 500));

  tree_cpu_sample a = sample_tree_cpu(peer.pid());
  cpu_sample root_a = sample_cpu(peer.pid());
  // Wait (bounded) until the busy child has run at all, rather than for a fixed time.
  cpu_usage d;
  cpu_usage root;
  for (int i = 0; i < 500; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    d = tree_cpu_delta(a, sample_tree_cpu(peer.pid()));
    root = cpu_delta(root_a, sample_cpu(peer.pid()));
    if (d.best_s() > root.best_s()) break;
  }
  EXPECT_GT(d.best_s(), root.best_s());  // the child's CPU is in the sum

  EXPECT_EQ(peer.stop(), "");  // the fake exits 0 on SIGTERM; the busy loop dies of it
  EXPECT_FALSE(any_running(tree));
  EXPECT_TRUE(port_is_free(o.host, o.port));
  EXPECT_EQ(peer.pid(), -1);
}

TEST(peer_process, ACommandThatNeverListensFailsWithinItsBound) {
  peer_box box;
  process_options o = box.options("echo starting; exec sleep 60");
  o.ready_timeout_s = 0.5;
  try {
    case_process peer(o);
    FAIL() << "started";
  } catch (const case_error& e) {
    const std::string what = e.what();
    EXPECT_NE(
        what.find("peer fake: nothing accepted connections on 127.0.0.1:" + std::to_string(o.port)),
        std::string::npos)
        << what;
    EXPECT_NE(what.find("exec sleep 60"), std::string::npos) << what;
    EXPECT_NE(what.find("starting"), std::string::npos) << what;  // the log's tail
  }
}

TEST(peer_process, ACommandThatExitsSaysSo) {
  peer_box box;
  try {
    case_process peer(box.options("echo no config >&2; exit 3"));
    FAIL() << "started";
  } catch (const case_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("exited during start-up (exit code 3)"), std::string::npos) << what;
    EXPECT_NE(what.find("foreground"), std::string::npos) << what;
    EXPECT_NE(what.find("no config"), std::string::npos) << what;
  }
}

TEST(peer_process, APeerIgnoringSigtermIsKilled) {
  peer_box box;
  process_options o = box.options("FAKE_IGNORE_TERM=1 " + fake() + " & wait");
  o.stop_grace_s = 0.3;
  case_process peer(o);
  auto tree = process_tree(peer.pid());
  ASSERT_GE(tree.size(), 2u);  // the shell waits on the server it started
  std::string note = peer.stop();
  EXPECT_NE(note.find("ignored SIGTERM"), std::string::npos) << note;
  EXPECT_NE(note.find("sent SIGKILL"), std::string::npos) << note;
  EXPECT_FALSE(any_running(tree));
  EXPECT_TRUE(port_is_free(o.host, o.port));
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(peer_process, RunBenchmarkMeasuresAPeerLikeAnyCase) {
  peer_box box;
  fs::create_directories(box.dir / "bin");
  fs::copy_file(KNIT_FAKE_SERVER, box.dir / "bin/knit-server");
  fs::copy_file(KNIT_FAKE_LOAD, box.dir / "bin/knit-load");
  run_options cfg;
  cfg.plan_name = "test";
  cfg.cases = parse_plan(R"([
    {"tag":"inline","mode":"sat","server_mode":"inline","cost_profile":"bun"},
    {"tag":"inline","mode":"rate","server_mode":"inline","cost_profile":"bun"},
    {"tag":"fake","mode":"sat","server_mode":"peer:fake","command":"exec )" +
                         std::string(KNIT_FAKE_SERVER) +
                         R"(","routes":["ping"],"cost_profile":"bun"},
    {"tag":"fake","mode":"rate","server_mode":"peer:fake","command":"exec )" +
                         std::string(KNIT_FAKE_SERVER) +
                         R"(","routes":["ping"],"cost_profile":"bun"}
  ])");
  cfg.idle_s = 0.2;
  cfg.warmup_s = 0.1;
  cfg.window_s = 0.3;
  cfg.repeat = 2;
  cfg.out_dir = (box.dir / "out").string();
  cfg.server_exe = (box.dir / "bin/knit-server").string();
  cfg.load_exe = (box.dir / "bin/knit-load").string();
  cfg.port = pick_free_port();
  cfg.lock_path = (box.dir / "lock").string();
  cfg.charts = false;
  cfg.foreign_max = 1e9;  // other jobs share the machine; reruns are foreign_load_test's
  ASSERT_EQ(run_benchmark(cfg), 0);
  auto rows = read_rows_file((box.dir / "out/rows.jsonl").string());
  ASSERT_EQ(rows.size(), 8u);
  const result_row& peer = rows[2];
  EXPECT_EQ(peer.tag, "fake");
  EXPECT_EQ(peer.server_mode, "peer:fake");
  EXPECT_EQ(peer.rep, 0);
  EXPECT_EQ(rows[6].server_mode, "peer:fake");  // interleaved: rep 1 runs it again
  // Loaded on /ping only, at the same per-route load: fake-load reports 1000.126 rps there.
  ASSERT_EQ(peer.routes.size(), 1u);
  EXPECT_EQ(peer.total_rps, 1000);
  EXPECT_TRUE(peer.pool_counters.empty());
  EXPECT_EQ(peer.server_env.count("KNIT_MODE"), 0u);
  EXPECT_EQ(peer.server_env.at("PORT"), std::to_string(cfg.port));
  EXPECT_EQ(peer.peer_command, std::optional<std::string>("exec " + std::string(KNIT_FAKE_SERVER)));
  EXPECT_EQ(peer.peer_processes, std::optional<int>(1));
  EXPECT_GE(peer.os_threads, 1);
  ASSERT_TRUE(peer.foreign_cores.has_value());
  const result_row& peer_rate = rows[3];
  EXPECT_DOUBLE_EQ(*peer_rate.rate_per_route, 1400);  // 70% of inline's 6000 / 3, like knit's
  EXPECT_DOUBLE_EQ(peer_rate.routes.at("ping").rps, 1400);
  const std::string line = slurp(box.dir / "out/rows.jsonl");
  EXPECT_NE(line.find("\"pool_counters\": null"), std::string::npos);
  const std::string md = slurp(box.dir / "out/report.md");
  EXPECT_NE(md.find("### knit vs the peers"), std::string::npos) << md;
  EXPECT_NE(md.find("| peer: fake (/ping only) | 1000 | - | - | 1000 | - |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("carry no pool counters (`null`)"), std::string::npos);
}

}  // namespace
}  // namespace knit::bench

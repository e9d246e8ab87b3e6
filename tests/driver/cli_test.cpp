// knit-bench's command line (bench/driver/cli.cpp): both value conventions, the defaults,
// the plan choice, and a clear error for each kind of bad input.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/cli.hpp"

using namespace knit::bench;

namespace {

bench_command parse(std::vector<std::string> args) {
  args.insert(args.begin(), "knit-bench");
  return parse_command_line(args);
}

// The message of the cli_error that parsing `args` throws ("" if it does not throw one).
std::string error_of(const std::vector<std::string>& args) {
  try {
    parse(args);
  } catch (const cli_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(bench_cli, RunDefaults) {
  const bench_command c = parse({"run"});
  EXPECT_EQ(c.what, bench_command::kind::run);
  EXPECT_EQ(c.builtin_name, "default");
  EXPECT_TRUE(c.plan_file.empty());
  EXPECT_EQ(c.run.host, "127.0.0.1");
  EXPECT_EQ(c.run.port, 3000);
  EXPECT_EQ(c.run.rate_fraction, 0.7);
  EXPECT_EQ(c.run.lock_path, "/tmp/knit-bench.lock");
  EXPECT_EQ(c.run.foreign_max, 0.1);
  EXPECT_EQ(c.run.foreign_retries, 2);
  EXPECT_EQ(c.run.peer_ready_timeout_s, 10);
  EXPECT_TRUE(c.run.charts);
  EXPECT_FALSE(c.run.append);
  EXPECT_FALSE(c.repeat || c.conns || c.idle_s || c.warmup_s || c.window_s);
  EXPECT_TRUE(c.run.server_cpus.empty() && c.run.gen_cpus.empty());
  EXPECT_EQ(c.run.command_line, (std::vector<std::string>{"knit-bench", "run"}));
}

TEST(bench_cli, BothValueConventions) {
  for (const bool with_equals : {false, true}) {
    std::vector<std::string> args{"run", "--full"};
    auto flag = [&](const std::string& f, const std::string& v) {
      if (with_equals) {
        args.push_back(f + "=" + v);
      } else {
        args.push_back(f);
        args.push_back(v);
      }
    };
    flag("--out", "/tmp/x");
    flag("--repeat", "3");
    flag("--idle", "0.5");
    flag("--warmup", "1");
    flag("--duration", "2.5");
    flag("--conns", "64");
    flag("--rate-fraction", "0.5");
    flag("--profiles", "bun,native");
    flag("--server-cpus", "0-1");
    flag("--gen-cpus", "2");
    flag("--gen-threads", "2");
    flag("--host", "localhost");
    flag("--port", "3001");
    flag("--lock", "/tmp/l");
    flag("--foreign-max", "0.25");
    flag("--foreign-retries", "0");
    flag("--peer", "nginx=nginx -g x");
    flag("--peer-routes", "nginx=ping");
    flag("--peer-timeout", "3");
    args.push_back("--append");
    args.push_back("--no-charts");
    const bench_command c = parse(args);
    SCOPED_TRACE(with_equals ? "--flag=value" : "--flag value");
    EXPECT_EQ(c.builtin_name, "full");
    EXPECT_EQ(c.run.out_dir, "/tmp/x");
    EXPECT_EQ(c.repeat, std::optional<int>(3));
    EXPECT_EQ(c.idle_s, std::optional<double>(0.5));
    EXPECT_EQ(c.warmup_s, std::optional<double>(1));
    EXPECT_EQ(c.window_s, std::optional<double>(2.5));
    EXPECT_EQ(c.conns, std::optional<int>(64));
    EXPECT_EQ(c.run.rate_fraction, 0.5);
    EXPECT_EQ(c.profiles, (std::vector<std::string>{"bun", "native"}));
    EXPECT_EQ(c.run.server_cpus, (std::vector<int>{0, 1}));
    EXPECT_EQ(c.run.gen_cpus, (std::vector<int>{2}));
    EXPECT_EQ(c.run.gen_threads, 2);
    EXPECT_EQ(c.run.host, "localhost");
    EXPECT_EQ(c.run.port, 3001);
    EXPECT_EQ(c.run.lock_path, "/tmp/l");
    EXPECT_EQ(c.run.foreign_max, 0.25);
    EXPECT_EQ(c.run.foreign_retries, 0);
    ASSERT_EQ(c.peers.size(), 1u);
    EXPECT_EQ(c.peers[0].name, "nginx");
    EXPECT_EQ(c.peers[0].command, "nginx -g x");
    EXPECT_EQ(c.peers[0].routes, (std::vector<std::string>{"ping"}));
    EXPECT_EQ(c.run.peer_ready_timeout_s, 3);
    EXPECT_TRUE(c.run.append);
    EXPECT_FALSE(c.run.charts);
  }
}

TEST(bench_cli, RepeatedFlagKeepsTheLastValue) {
  EXPECT_EQ(parse({"run", "--port", "1", "--port=2"}).run.port, 2);
}

TEST(bench_cli, PlanFileAndPlanSubcommand) {
  EXPECT_EQ(parse({"run", "--plan", "p.json"}).plan_file, "p.json");
  EXPECT_TRUE(parse({"run", "--plan", "p.json"}).builtin_name.empty());
  const bench_command p = parse({"plan", "--hosts-sweep-small", "--profiles=native"});
  EXPECT_EQ(p.what, bench_command::kind::plan);
  EXPECT_EQ(p.builtin_name, "hosts-sweep-small");
  EXPECT_EQ(p.profiles, (std::vector<std::string>{"native"}));
}

TEST(bench_cli, Report) {
  const bench_command r = parse({"report", "out/rows.jsonl", "--no-charts"});
  EXPECT_EQ(r.what, bench_command::kind::report);
  EXPECT_EQ(r.rows_path, "out/rows.jsonl");
  EXPECT_FALSE(r.charts);
  EXPECT_TRUE(parse({"report", "rows.jsonl"}).charts);
}

TEST(bench_cli, Rejects) {
  EXPECT_NE(error_of({}), "");
  EXPECT_NE(error_of({"bogus"}), "");
  EXPECT_NE(error_of({"run", "--bogus"}), "");
  EXPECT_NE(error_of({"run", "--port"}), "");
  EXPECT_NE(error_of({"run", "--port", "0"}), "");
  EXPECT_NE(error_of({"run", "--port", "x"}), "");
  EXPECT_NE(error_of({"run", "--repeat", "1001"}), "");
  EXPECT_NE(error_of({"run", "--idle", "-1"}), "");
  EXPECT_NE(error_of({"run", "--duration", "abc"}), "");
  EXPECT_NE(error_of({"run", "--rate-fraction", "0"}), "");
  EXPECT_NE(error_of({"run", "--rate-fraction", "11"}), "");
  EXPECT_NE(error_of({"run", "--server-cpus", "a-b"}), "");
  EXPECT_NE(error_of({"run", "--peer", "nocommand"}), "");
  EXPECT_NE(error_of({"run", "--peer-routes", "nginx=ping"}), "");
  EXPECT_NE(error_of({"run", "--peer", "n=x", "--peer-routes", "n=nosuchroute"}), "");
  EXPECT_NE(error_of({"report"}), "");
  EXPECT_NE(error_of({"report", "a", "b"}), "");
  EXPECT_NE(error_of({"plan"}), "");
  EXPECT_NE(error_of({"plan", "--default", "--full"}), "");
  EXPECT_NE(error_of({"run", "--gen-cpus", "1", "extra"}), "");
  EXPECT_EQ(error_of({"run", "--full", "--default"}),
            "choose one of --plan, --default, --full, --cost-sweep, --hosts-sweep, "
            "--hosts-sweep-small, --fleet");
  EXPECT_EQ(error_of({"run", "--plan", "p.json", "--fleet"}),
            error_of({"run", "--full", "--default"}));
  EXPECT_EQ(error_of({"run", "--profiles", "bun,deno"}),
            "--profiles: unknown cost profile \"deno\" (bun, native)");
}

TEST(bench_cli, HelpIsGenerated) {
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"--help"}, {"-h"}, {"help"}, {"run", "--help"}}) {
    try {
      parse(args);
      ADD_FAILURE() << args.front() << ": no help";
    } catch (const cli_help& h) {
      const std::string text = h.what();
      EXPECT_NE(text.find("run"), std::string::npos) << text;
      if (args.size() == 2) {
        EXPECT_NE(text.find("--foreign-retries"), std::string::npos) << text;
      }
    }
  }
}

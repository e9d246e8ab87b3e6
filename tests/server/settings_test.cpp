// server/settings/: the table's rows, the command line over it (flag beats variable), one error
// style for every bad value, the warnings for unknown KNIT_* variables, and the defaults: the
// table's are the ones the code runs with, and a row says why exactly where the knit library's
// default differs.
#include "settings/settings_table.hpp"  // first: the header must be self-contained

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "settings/command_line.hpp"
#include "settings/effective_values.hpp"
#include "settings/server_settings.hpp"
#include "settings/unknown_variables.hpp"

namespace knit_server {
namespace {

using env_map = std::map<std::string, std::string>;

env_lookup lookup_in(env_map env) {
  return [env = std::move(env)](const char* name) -> std::optional<std::string> {
    const auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
}

command_line parse(std::vector<std::string> args, env_map env = {}) {
  return parse_command_line(args, lookup_in(std::move(env)));
}

server_settings build(std::vector<std::string> args, env_map env = {}) {
  return build_settings(parse(std::move(args), std::move(env)).values);
}

// The server_config_error text of parsing and building, or "" when both succeed.
std::string error_of(std::vector<std::string> args, env_map env = {}) {
  try {
    build(std::move(args), std::move(env));
  } catch (const server_config_error& e) {
    return e.what();
  }
  return "";
}

std::string effective(std::string_view env, const server_settings& s) {
  return effective_value(*find_setting(env), s);
}

TEST(settings_table, each_flag_is_its_variable_in_lower_case_and_hidden_rows_have_none) {
  for (const setting& row : settings_table()) {
    if (row.group == setting_group::hidden || row.env == "JWT_SECRET") {
      EXPECT_TRUE(row.flag.empty()) << row.env;
      continue;
    }
    std::string want = "--";
    for (char c : row.env.starts_with("KNIT_") ? row.env.substr(5) : row.env) {
      want += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    EXPECT_EQ(row.flag, want) << row.env;
    EXPECT_FALSE(row.help.empty()) << row.env;
    EXPECT_FALSE(row.unit.empty()) << row.env;
    EXPECT_NE(row.default_value.empty(), row.default_note.empty()) << row.env;  // one of them
    EXPECT_EQ(find_setting(row.env), &row);
  }
}

TEST(settings_table, every_variable_the_server_reads_is_a_row) {
  // The 39 the server reads (server_settings.cpp), the removed one it refuses and the two test
  // hooks a worker process reads (process_isolation.cpp).
  for (const char* name : {"HOST",
                           "PORT",
                           "KNIT_MODE",
                           "KNIT_HOSTS",
                           "KNIT_IO",
                           "KNIT_AUTO_INLINE_US",
                           "JWT_SECRET",
                           "KNIT_THREADS",
                           "KNIT_SPIN",
                           "KNIT_SPIN_GATE",
                           "KNIT_PARK",
                           "KNIT_DOORBELL",
                           "KNIT_STEAL",
                           "KNIT_MAX_SPINNERS",
                           "KNIT_WAKE_COST",
                           "KNIT_QUEUE_CAPACITY",
                           "KNIT_WORKER_CPUS",
                           "KNIT_WORKER_NICE",
                           "KNIT_WORKER_SCHED",
                           "KNIT_HEAVY_SHARE",
                           "KNIT_ISOLATION",
                           "KNIT_WORKER_SANDBOX",
                           "KNIT_PROCESS_LANES",
                           "KNIT_WORKER_MEMORY_MB",
                           "KNIT_WORKER_SPARE",
                           "KNIT_MAX_CONNECTIONS",
                           "KNIT_IDLE_TIMEOUT_MS",
                           "KNIT_MEMORY_BUDGET_MB",
                           "KNIT_SNDBUF_KB",
                           "KNIT_MAX_QUEUE_MS",
                           "KNIT_MAX_QUEUED",
                           "KNIT_MAX_QUEUE_WAIT_MS",
                           "KNIT_MAX_PENDING",
                           "KNIT_STUCK_MS",
                           "KNIT_LEND_WORKERS",
                           "KNIT_DRAIN_DELAY_MS",
                           "KNIT_STOP_TIMEOUT_MS",
                           "KNIT_COST_PROFILE",
                           "KNIT_SSR_COST_US",
                           "KNIT_JWT_COST_US",
                           "KNIT_PROCESS_HOST_RING",
                           "KNIT_TEST_WORKER_START_DELAY_MS",
                           "KNIT_TEST_WORKER_EXIT"}) {
    EXPECT_NE(find_setting(name), nullptr) << name;
  }
  EXPECT_EQ(settings_table().size(), 43u);
  for (const char* name : {"KNIT_COST_PROFILE", "KNIT_SSR_COST_US", "KNIT_JWT_COST_US"}) {
    EXPECT_EQ(find_setting(name)->group, setting_group::benchmark) << name;
  }
}

// Setting every row to its table default changes nothing the server runs with: the table's
// defaults are the code's.
TEST(settings_defaults, the_tables_defaults_are_what_the_code_runs_with) {
  const server_settings unset = build({});
  env_map spelled;
  for (const setting& row : settings_table()) {
    if (!row.default_value.empty()) spelled[std::string(row.env)] = row.default_value;
  }
  const server_settings given = build({}, spelled);
  for (const setting& row : settings_table()) {
    EXPECT_EQ(effective_value(row, given), effective_value(row, unset)) << row.env;
    if (!row.default_value.empty() && row.group != setting_group::hidden) {
      EXPECT_EQ(effective_value(row, unset), row.default_value) << row.env;
    }
  }
  // The structs' own initializers agree, for code that builds them without the table.
  const server_config plain;
  EXPECT_EQ(unset.cfg.host, plain.host);
  EXPECT_EQ(unset.cfg.port, plain.port);
  EXPECT_EQ(unset.cfg.mode, plain.mode);
  EXPECT_EQ(unset.cfg.worker_isolation, plain.worker_isolation);
  EXPECT_EQ(unset.cfg.hosts, plain.hosts);
  EXPECT_EQ(unset.cfg.cost_profile, plain.cost_profile);
  EXPECT_EQ(unset.cfg.max_connections, plain.max_connections);
  EXPECT_EQ(unset.cfg.idle_timeout, plain.idle_timeout);
  EXPECT_EQ(unset.cfg.memory_budget_mb, plain.memory_budget_mb);
  EXPECT_EQ(unset.cfg.sndbuf_kb, plain.sndbuf_kb);
  EXPECT_EQ(unset.cfg.max_queue_delay, plain.max_queue_delay);
  EXPECT_EQ(unset.cfg.max_queued, plain.max_queued);
  EXPECT_EQ(unset.cfg.max_queue_wait_ms, plain.max_queue_wait_ms);
  EXPECT_EQ(unset.cfg.drain_delay, plain.drain_delay);
  EXPECT_EQ(unset.cfg.stop_grace, plain.stop_grace);
  EXPECT_EQ(unset.offload.inline_below_us, offload_options::kDefaultInlineUs);
}

// A row says why exactly where the knit library's default (pool_options{}, process_options{})
// is not the server's.
TEST(settings_defaults, a_why_line_exactly_where_the_library_default_differs) {
  const server_settings server = build({});
  server_settings library = server;
  library.pool = knit::pool_options{};
  library.process = knit::process_options{};
  std::vector<std::string_view> differ;
  for (const setting& row : settings_table()) {
    if (effective_value(row, library) != effective_value(row, server)) differ.push_back(row.env);
    EXPECT_EQ(effective_value(row, library) != effective_value(row, server), !row.why.empty())
        << row.env << ": library " << effective_value(row, library) << ", server "
        << effective_value(row, server);
  }
  EXPECT_EQ(differ, (std::vector<std::string_view>{"KNIT_HEAVY_SHARE", "KNIT_WORKER_SANDBOX",
                                                   "KNIT_PROCESS_LANES", "KNIT_WORKER_MEMORY_MB",
                                                   "KNIT_WORKER_SPARE", "KNIT_STUCK_MS",
                                                   "KNIT_LEND_WORKERS"}));
}

TEST(command_line, a_flag_beats_its_variable_and_the_variable_beats_the_default) {
  const command_line line =
      parse({"--threads", "5", "--park=7"}, {{"KNIT_THREADS", "3"}, {"KNIT_STEAL", "0"}});
  EXPECT_EQ(line.action, command_action::run);
  const server_settings s = build_settings(line.values);
  EXPECT_EQ(s.pool.threads, 5u);
  EXPECT_EQ(s.pool.park_ms, 7u);
  EXPECT_FALSE(s.pool.steal);
  EXPECT_TRUE(s.pool.doorbell);
  EXPECT_EQ(line.values.get("KNIT_THREADS").origin, setting_origin::flag);
  EXPECT_EQ(line.values.get("KNIT_STEAL").origin, setting_origin::env);
  EXPECT_EQ(line.values.get("KNIT_DOORBELL").origin, setting_origin::default_value);
  // The last of a repeated flag wins; an empty variable is the default.
  EXPECT_EQ(build({"--port", "1", "--port", "2"}).cfg.port, 2);
  EXPECT_EQ(build({}, {{"KNIT_SPIN", ""}}).pool.spin_us, std::nullopt);
  const std::string config = print_config_text(line.values, s);
  EXPECT_NE(config.find("KNIT_THREADS=5"), std::string::npos) << config;
  EXPECT_NE(config.find("# flag --threads\n"), std::string::npos) << config;
  EXPECT_NE(config.find("KNIT_STEAL=0"), std::string::npos) << config;
  EXPECT_NE(config.find("# env\n"), std::string::npos) << config;
}

TEST(command_line, the_actions) {
  EXPECT_EQ(parse({"--help"}).action, command_action::help);
  EXPECT_EQ(parse({"-h", "--no-such-option"}).action, command_action::help);
  EXPECT_EQ(parse({"--version"}).action, command_action::version);
  EXPECT_EQ(parse({"--print-config", "--threads=2"}).action, command_action::print_config);
  EXPECT_EQ(parse({"--print-env-file"}).action, command_action::print_env_file);
  EXPECT_EQ(parse({"--print-man-options"}).action, command_action::print_man_options);
  EXPECT_EQ(parse({"--print-markdown"}).action, command_action::print_markdown);
}

TEST(command_line, unknown_options_and_arguments_are_refused_with_a_hint) {
  EXPECT_EQ(error_of({"--thrads", "2"}),
            "--thrads: expected a knit-server option (did you mean --threads?)");
  EXPECT_EQ(error_of({"--max-queue-wait=5"}),
            "--max-queue-wait: expected a knit-server option (did you mean --max-queue-wait-ms?)");
  EXPECT_EQ(error_of({"--frobnicate"}),
            "--frobnicate: expected a knit-server option (knit-server --help lists them)");
  EXPECT_EQ(error_of({"serve"}),
            "\"serve\": expected no arguments, only options (knit-server --help)");
  EXPECT_EQ(error_of({"--threads"}), "--threads: expected an integer from 1 to 1024");
  // JWT_SECRET has no flag: a secret does not belong on a command line.
  EXPECT_NE(error_of({"--jwt-secret=x"}), "");
}

// One style, NAME="value": expected ..., naming the flag or the variable as it was given.
TEST(setting_values, every_bad_value_names_the_setting_the_value_and_what_it_takes) {
  EXPECT_EQ(error_of({"--threads=abc"}), R"(--threads="abc": expected an integer from 1 to 1024)");
  EXPECT_EQ(error_of({}, {{"KNIT_THREADS", "0"}}),
            R"(KNIT_THREADS="0": expected an integer from 1 to 1024)");
  EXPECT_EQ(error_of({"--worker-sched=fast"}),
            R"(--worker-sched="fast": expected other, batch or idle)");
  EXPECT_EQ(error_of({}, {{"KNIT_DOORBELL", "yes"}}), R"(KNIT_DOORBELL="yes": expected 0 or 1)");
  EXPECT_EQ(error_of({}, {{"KNIT_WORKER_CPUS", "1-"}}),
            R"(KNIT_WORKER_CPUS="1-": expected a CPU list such as 0,2,4-7)");
  EXPECT_EQ(error_of({"--host=example.com"}),
            R"(--host="example.com": expected an IP address such as 127.0.0.1, 0.0.0.0 or ::1, )"
            R"(or localhost)");
  EXPECT_EQ(error_of({}, {{"KNIT_WORKER_SANDBOX", "loose"}}),
            R"(KNIT_WORKER_SANDBOX="loose": expected strict or off)");
  EXPECT_EQ(error_of({}, {{"KNIT_PROCESS_LANES", "33"}}),
            R"(KNIT_PROCESS_LANES="33": expected an integer from 1 to 32)");
  EXPECT_EQ(error_of({}, {{"KNIT_WORKER_MEMORY_MB", "1G"}}),
            R"(KNIT_WORKER_MEMORY_MB="1G": expected an integer from 0 to 1048576)");
  // Each numeric row refuses one past its top, a sign and trailing text, naming itself.
  for (const setting& row : settings_table()) {
    if (row.kind != setting_kind::number) continue;
    for (const std::string& bad :
         {std::to_string(row.hi + 1), std::string("+1"), std::string("1x")}) {
      const std::string message = error_of({}, {{std::string(row.env), bad}});
      EXPECT_EQ(message.find(std::string(row.env) + "=\"" + bad + "\": expected "), 0u)
          << row.env << "=" << bad << ": " << message;
    }
  }
}

TEST(setting_values, the_rules_between_settings_name_them_as_given) {
  EXPECT_EQ(error_of({"--isolation=process", "--mode=inline"}),
            R"(--isolation="process": expected it only with KNIT_MODE=pooled (--mode=inline )"
            R"(runs /ssr and /jwt on threads that are not knit workers))");
  EXPECT_EQ(error_of({"--doorbell=0"}),
            R"(--doorbell="0": expected 1 while KNIT_PARK is 0: with no doorbell and no park )"
            R"(timeout a parked worker would never wake)");
  EXPECT_EQ(build({"--doorbell=0", "--park=5"}).pool.park_ms, 5u);
  EXPECT_NE(error_of({"--mode=multi", "--hosts=2"})
                .find(R"(--hosts="2": expected 1 with )"
                      R"(--mode=multi)"),
            std::string::npos);
  // The removed setting is refused set to anything, even empty.
  for (const char* value : {"", "0", "1"}) {
    EXPECT_EQ(error_of({}, {{"KNIT_PROCESS_HOST_RING", value}})
                  .find(std::string("KNIT_PROCESS_HOST_RING=\"") + value + "\": expected it unset"),
              0u)
        << value;
  }
}

TEST(server_settings, the_pool_and_process_options_the_server_builds) {
  const server_settings s = build({}, {{"KNIT_ISOLATION", "process"}, {"KNIT_HOSTS", "4"}});
  EXPECT_EQ(s.pool.stuck_after, std::chrono::milliseconds(30'000));
  EXPECT_EQ(s.pool.max_hosts, 16u);  // room for the 4 loops (the building thread takes none)
  EXPECT_EQ(build({"--hosts=40", "--mode=auto"}).pool.max_hosts, 40u);
  EXPECT_EQ(build({"--hosts=64", "--mode=pooled"}).pool.max_hosts, 64u);
  EXPECT_EQ(build({"--hosts=1024", "--mode=asio"}).pool.max_hosts, 16u);  // no knit pool
  EXPECT_EQ(s.pool.process.sandbox, knit::process_sandbox::strict);
  EXPECT_EQ(s.pool.process.lanes, 32u);
  EXPECT_EQ(s.pool.process.memory_limit, std::size_t{1024} << 20);
  EXPECT_TRUE(s.pool.process.spare_child);
  EXPECT_GE(s.pool.process.arena_bytes, 12 * server_config::kBodyLimit);
  // Thread isolation starts no worker process: the pool keeps the library's process options.
  EXPECT_FALSE(build({}).pool.process.spare_child);
  EXPECT_EQ(build({"--stop-timeout-ms=700"}).cfg.stop_grace, std::chrono::milliseconds(700));
  const server_settings gate = build({"--spin=5"});
  EXPECT_FALSE(gate.pool.effective_spin_gate());  // an explicit spin is not gated by default
  EXPECT_EQ(effective("KNIT_SPIN_GATE", gate), "off");
  EXPECT_EQ(effective("KNIT_MAX_QUEUE_WAIT_MS", build({"--max-queue-ms=1"})), "1.4");
  EXPECT_EQ(effective("KNIT_WORKER_CPUS", build({"--worker-cpus=0,2-3"})), "0,2,3");
  // The server keeps heavy work a quarter of a shared CPU unless told otherwise.
  EXPECT_EQ(build({}).pool.heavy_share, 25u);
  EXPECT_EQ(build({"--heavy-share=0"}).pool.heavy_share, 0u);
  EXPECT_EQ(effective("KNIT_HEAVY_SHARE", build({}, {{"KNIT_HEAVY_SHARE", "10"}})), "10");
  // Held wakes (knit::pool_options::wake_at_turn_end) only where the heavy share is off.
  EXPECT_FALSE(build({}).pool.wake_at_turn_end);
  EXPECT_FALSE(build({"--heavy-share=50"}).pool.wake_at_turn_end);
  EXPECT_TRUE(build({"--heavy-share=0"}).pool.wake_at_turn_end);
  EXPECT_TRUE(build({"--heavy-share=100"}).pool.wake_at_turn_end);
}

TEST(server_settings, the_secret_is_never_printed) {
  const command_line line = parse({}, {{"JWT_SECRET", "hunter2"}});
  const std::string config = print_config_text(line.values, build_settings(line.values));
  EXPECT_EQ(config.find("hunter2"), std::string::npos) << config;
  EXPECT_NE(config.find("#JWT_SECRET=(given, not shown)"), std::string::npos) << config;
}

TEST(unknown_variables, a_knit_variable_that_is_no_setting_is_named_with_the_closest_one) {
  const std::vector<std::string> environment = {"KNIT_THRADS=2",
                                                "KNIT_THREADS=2",
                                                "HOME=/root",
                                                "KNIT_TEST_WORKER_EXIT=3",
                                                "KNIT_PROCESS_HOST_RING=0",
                                                "KNIT_ZZZZZZZZZZZZ=1",
                                                "KNIT_WORKER_SANDBOXX=off",
                                                "KNIT_FLEET_DIR=/tmp/f",
                                                "KNIT_STRESS_SCALE=10"};
  EXPECT_EQ(unknown_variable_warnings(environment),
            (std::vector<std::string>{
                "knit-server: warning: KNIT_THRADS is not a knit-server setting and is ignored "
                "(did you mean KNIT_THREADS?)",
                "knit-server: warning: KNIT_ZZZZZZZZZZZZ is not a knit-server setting and is "
                "ignored (knit-server --help lists them)",
                "knit-server: warning: KNIT_WORKER_SANDBOXX is not a knit-server setting and is "
                "ignored (did you mean KNIT_WORKER_SANDBOX?)"}));
}

TEST(unknown_variables, the_closest_name_is_only_offered_when_it_is_near) {
  const std::vector<std::string_view> names = {"KNIT_THREADS", "KNIT_STEAL", "KNIT_PARK"};
  EXPECT_EQ(closest_name("KNIT_THREAD", names), "KNIT_THREADS");
  EXPECT_EQ(closest_name("KNIT_STAEL", names), "KNIT_STEAL");
  EXPECT_EQ(closest_name("KNIT_COLOUR", names), "");
}

}  // namespace
}  // namespace knit_server

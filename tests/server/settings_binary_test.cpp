// knit-server's settings as a user meets them, through the real binary: --help, --version,
// --print-config, the exit code and the one line of a bad flag or value, the warning for an
// unknown KNIT_* variable; and the checked-in files printed from the table (the environment
// file, the man page's option list, docs/configuration.md), which must be what the binary
// prints, each setting in them with the default the code runs with.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server_process.hpp"
#include "settings/settings_table.hpp"

namespace knit_server {
namespace {

constexpr unsigned kDeadlineS = 20;

struct run_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs knit-server with `args` in an environment of `env` alone (no KNIT_* of the test's own)
// and waits for it: every call here is one that prints and exits. One that starts serving
// instead (the behaviour under test broken) is ended by SIGALRM after kDeadlineS, which the
// alarm survives execve to deliver, and reads as exit code -1: a failure, not a hung test.
run_result run_server(const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& env = {}) {
  char out_path[] = "/tmp/knit-settings-out-XXXXXX";
  char err_path[] = "/tmp/knit-settings-err-XXXXXX";
  const int out_fd = ::mkostemp(out_path, O_CLOEXEC);
  const int err_fd = ::mkostemp(err_path, O_CLOEXEC);
  std::vector<std::string> argv_text = {KNIT_SERVER_PATH};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<std::string> env_text;
  for (const auto& [name, value] : env) env_text.push_back(name + "=" + value);
  std::vector<char*> argv, envp;
  for (std::string& a : argv_text) argv.push_back(a.data());
  for (std::string& e : env_text) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(kDeadlineS);
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(err_fd, STDERR_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    std::_Exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(out_fd);
  ::close(err_fd);
  run_result r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  ::unlink(out_path);
  ::unlink(err_path);
  return r;
}

// The lines of `file` strictly between the line `begin` and the line `end`, each with its '\n'.
std::string between(const std::string& file, const std::string& begin, const std::string& end) {
  const std::string text = read_file(std::string(KNIT_SOURCE_DIR) + "/" + file);
  const std::size_t b = text.find(begin + "\n");
  const std::size_t e = text.find("\n" + end + "\n");
  if (b == std::string::npos || e == std::string::npos || e < b)
    return "(no markers in " + file + ")";
  return text.substr(b + begin.size() + 1, e + 1 - (b + begin.size() + 1));
}

bool shown(const setting& row) { return row.group != setting_group::hidden; }

// `text` with each run of spaces and newlines as one space: --help wraps its descriptions.
std::string squeezed(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool blank = c == ' ' || c == '\n';
    if (blank && (out.empty() || out.back() == ' ')) continue;
    out += blank ? ' ' : c;
  }
  return out;
}

const char* const kRegenerate =
    "\nThe checked-in file is not what the binary prints from the settings table: run "
    "server/settings/update_generated_files.sh build/bin/knit-server";

TEST(settings_files, the_environment_file_is_what_the_binary_prints) {
  const run_result r = run_server({"--print-env-file"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(std::string(KNIT_SOURCE_DIR) + "/packaging/knit-server.default"), r.out)
      << kRegenerate;
}

TEST(settings_files, the_man_pages_option_list_is_what_the_binary_prints) {
  const run_result r = run_server({"--print-man-options"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(between("packaging/knit-server.1", ".\\\" BEGIN GENERATED OPTIONS",
                    ".\\\" END GENERATED OPTIONS"),
            r.out)
      << kRegenerate;
}

TEST(settings_files, the_configuration_docs_table_is_what_the_binary_prints) {
  const run_result r = run_server({"--print-markdown"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(
      between("docs/configuration.md", "<!-- BEGIN GENERATED: knit-server --print-markdown -->",
              "<!-- END GENERATED -->"),
      r.out)
      << kRegenerate;
}

// Every setting the server reads is in --help, in the environment file and in the man page,
// each with the default --print-config reports for an empty environment (what the code runs
// with); the hidden rows (test hooks, the removed setting) are in none of them.
TEST(settings_files, every_setting_is_documented_with_the_codes_default) {
  const run_result config = run_server({"--print-config"});
  ASSERT_EQ(config.exit_code, 0) << config.err;
  const run_result help = run_server({"--help"});
  ASSERT_EQ(help.exit_code, 0) << help.err;
  const std::string env_file =
      read_file(std::string(KNIT_SOURCE_DIR) + "/packaging/knit-server.default");
  const std::string man = read_file(std::string(KNIT_SOURCE_DIR) + "/packaging/knit-server.1");
  const std::string docs = read_file(std::string(KNIT_SOURCE_DIR) + "/docs/configuration.md");
  for (const setting& row : settings_table()) {
    const std::string env(row.env);
    if (!shown(row)) {
      for (const std::string* text : {&help.out, &env_file, &man, &docs, &config.out}) {
        EXPECT_EQ(text->find(env + "="), std::string::npos) << env;
      }
      EXPECT_EQ(help.out.find(env), std::string::npos) << env;
      continue;
    }
    EXPECT_NE(help.out.find(env), std::string::npos) << env;
    if (!row.flag.empty()) {
      EXPECT_NE(help.out.find(std::string(row.flag)), std::string::npos) << row.flag;
    }
    EXPECT_NE(env_file.find("\n#" + env + "="), std::string::npos) << env;
    EXPECT_NE(docs.find("`" + env + "`"), std::string::npos) << env;
    EXPECT_NE(man.find("\\fB" + env + "\\fR"), std::string::npos) << env;
    if (row.default_value.empty()) continue;  // computed at start-up: the docs give the rule
    const std::string value(row.default_value);
    EXPECT_NE(config.out.find("\n" + env + "=" + value + " "), std::string::npos)
        << env << ": --print-config does not show the table's default " << value;
    EXPECT_NE(squeezed(help.out).find(env + "; " + accepted_in_full(row) + "; default " + value),
              std::string::npos)
        << env;
    EXPECT_NE(env_file.find("\n#" + env + "=" + value + "\n"), std::string::npos) << env;
    EXPECT_NE(man.find("Default: " + value + ".\n"), std::string::npos) << env;
    EXPECT_NE(docs.find("| `" + env + "` | `" + value + "` |"), std::string::npos) << env;
  }
}

TEST(knit_server_cli, help_and_version_answer_and_exit_0) {
  const run_result help = run_server({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out.find("knit-server: the reference HTTP server"), 0u) << help.out;
  for (std::string_view group :
       {"Server:", "Pool (knit workers):", "Process workers",
        "Limits:", "Stop (SIGTERM):", "Benchmark only (cost emulation):", "Environment only:"}) {
    EXPECT_NE(help.out.find(group), std::string::npos) << group;
  }
  EXPECT_EQ(help.out.find("--print-env-file"), std::string::npos);  // hidden
  const run_result version = run_server({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out, "knit-server " KNIT_PROJECT_VERSION "\n");
}

TEST(knit_server_cli, print_config_says_where_each_value_came_from) {
  const run_result r = run_server({"--print-config", "--threads", "5", "--mode=auto"},
                                  {{"KNIT_THREADS", "3"}, {"KNIT_PARK", "2"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nKNIT_THREADS=5 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# flag --threads\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nKNIT_MODE=auto "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nKNIT_PARK=2 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# env\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\nPORT=3000 "), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");
}

TEST(knit_server_cli, a_bad_value_exits_2_with_one_line_naming_it) {
  // PORT=0: were the flag not to win, the server would start, on a port nobody else needs.
  const run_result flag = run_server({"--threads=0"}, {{"KNIT_THREADS", "4"}, {"PORT", "0"}});
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_EQ(flag.err, "knit-server: --threads=\"0\": expected an integer from 1 to 1024\n");
  EXPECT_EQ(flag.out, "");
  const run_result env = run_server({}, {{"KNIT_WORKER_SCHED", "fast"}, {"PORT", "0"}});
  EXPECT_EQ(env.exit_code, 2);
  EXPECT_EQ(env.err, "knit-server: KNIT_WORKER_SCHED=\"fast\": expected other, batch or idle\n");
  // --print-config checks as the start does.
  EXPECT_EQ(run_server({"--print-config", "--port=x"}).exit_code, 2);
}

TEST(knit_server_cli, an_unknown_flag_exits_2_naming_it) {
  const run_result r = run_server({"--thrads=2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "knit-server: --thrads: expected a knit-server option (did you mean --threads?)\n");
}

TEST(knit_server_cli, an_unknown_knit_variable_is_named_and_a_test_hook_is_not) {
  const run_result r =
      run_server({"--print-config"}, {{"KNIT_THRADS", "2"}, {"KNIT_TEST_WORKER_EXIT", "3"}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err,
            "knit-server: warning: KNIT_THRADS is not a knit-server setting and is ignored (did "
            "you mean KNIT_THREADS?)\n");
  EXPECT_NE(r.out.find("\nKNIT_THREADS=1 "), std::string::npos);  // the typo changed nothing
}

// At a real start too: the warning comes before "listening on", and the server runs.
TEST(knit_server_cli, the_warning_comes_at_start_up) {
  knit_test::server_process server({{"KNIT_THRADS", "2"}, {"KNIT_MODE", "inline"}});
  ASSERT_TRUE(server.wait_listening()) << server.stderr_text();
  EXPECT_NE(server.stderr_text().find("warning: KNIT_THRADS is not a knit-server setting"),
            std::string::npos)
      << server.stderr_text();
  EXPECT_EQ(server.stop(), 0) << server.stderr_text();
}

}  // namespace
}  // namespace knit_server

// config.hpp's server_config as the settings build it from the environment
// (settings/server_settings.hpp: config_from_env): defaults, profiles, overrides, and a clear
// error for every bad value.
#include "config.hpp"  // first: the header must be self-contained

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "settings/server_settings.hpp"

namespace knit_server {
namespace {

server_config parse(std::map<std::string, std::string> env) {
  return config_from_env([&](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
}

// The server_config_error message for `env`, or "" if it parsed.
std::string error_of(std::map<std::string, std::string> env) {
  try {
    parse(std::move(env));
  } catch (const server_config_error& e) {
    return e.what();
  }
  return "";
}

TEST(config, defaults) {
  const server_config cfg = parse({});
  EXPECT_EQ(cfg.host, "127.0.0.1");
  EXPECT_EQ(cfg.port, 3000);
  EXPECT_EQ(cfg.mode, exec_mode::pooled);
  EXPECT_EQ(cfg.cost_profile, "native");
  EXPECT_EQ(cfg.ssr_cost_us, 0u);
  EXPECT_EQ(cfg.jwt_cost_us, 0u);
  EXPECT_EQ(cfg.max_connections, 10000u);
  EXPECT_EQ(cfg.idle_timeout, std::chrono::milliseconds(30000));
  EXPECT_EQ(cfg.drain_delay, std::chrono::milliseconds(0));
}

TEST(config, drain_delay) {
  EXPECT_EQ(parse({{"KNIT_DRAIN_DELAY_MS", "5000"}}).drain_delay, std::chrono::milliseconds(5000));
  EXPECT_EQ(parse({{"KNIT_DRAIN_DELAY_MS", "0"}}).drain_delay, std::chrono::milliseconds(0));
  EXPECT_EQ(parse({{"KNIT_DRAIN_DELAY_MS", ""}}).drain_delay, std::chrono::milliseconds(0));
  EXPECT_EQ(parse({{"KNIT_DRAIN_DELAY_MS", "600000"}}).drain_delay,
            std::chrono::milliseconds(600000));
  for (const char* value : {"-1", "1.5", "5s", "600001", " 10"}) {
    EXPECT_EQ(
        error_of({{"KNIT_DRAIN_DELAY_MS", value}}),
        std::string("KNIT_DRAIN_DELAY_MS=\"") + value + "\": expected an integer from 0 to 600000")
        << value;
  }
}

TEST(config, unset_secret_is_random_and_flagged) {
  const server_config a = parse({});
  const server_config b = parse({});
  EXPECT_TRUE(a.jwt_secret_generated);
  EXPECT_EQ(a.jwt_secret.size(), 32u);
  EXPECT_NE(a.jwt_secret, b.jwt_secret);
  const server_config given = parse({{"JWT_SECRET", "s3cret"}});
  EXPECT_FALSE(given.jwt_secret_generated);
  EXPECT_EQ(given.jwt_secret, "s3cret");
}

TEST(config, empty_means_default) {
  const server_config cfg = parse({{"PORT", ""}, {"KNIT_MODE", ""}, {"KNIT_SSR_COST_US", ""}});
  EXPECT_EQ(cfg.port, 3000);
  EXPECT_EQ(cfg.mode, exec_mode::pooled);
  EXPECT_EQ(cfg.ssr_cost_us, 0u);
}

TEST(config, reads_every_variable) {
  const server_config cfg = parse({{"HOST", "0.0.0.0"},
                                   {"PORT", "8080"},
                                   {"KNIT_MODE", "inline"},
                                   {"KNIT_MAX_CONNECTIONS", "5"},
                                   {"KNIT_IDLE_TIMEOUT_MS", "250"}});
  EXPECT_EQ(cfg.host, "0.0.0.0");
  EXPECT_EQ(cfg.port, 8080);
  EXPECT_EQ(cfg.mode, exec_mode::inline_host);
  EXPECT_EQ(cfg.max_connections, 5u);
  EXPECT_EQ(cfg.idle_timeout, std::chrono::milliseconds(250));
  EXPECT_EQ(parse({{"HOST", "::1"}}).host, "::1");
  EXPECT_EQ(parse({{"HOST", "localhost"}}).host, "localhost");
  EXPECT_EQ(parse({{"PORT", "0"}}).port, 0);
  EXPECT_EQ(parse({{"PORT", "65535"}}).port, 65535);
}

TEST(config, bun_profile_and_overrides) {
  const server_config bun = parse({{"KNIT_COST_PROFILE", "bun"}});
  EXPECT_EQ(bun.ssr_cost_us, 76u);
  EXPECT_EQ(bun.jwt_cost_us, 72u);
  const server_config mixed = parse({{"KNIT_COST_PROFILE", "bun"}, {"KNIT_JWT_COST_US", "10"}});
  EXPECT_EQ(mixed.ssr_cost_us, 76u);
  EXPECT_EQ(mixed.jwt_cost_us, 10u);
  const server_config native = parse({{"KNIT_COST_PROFILE", "native"}, {"KNIT_SSR_COST_US", "5"}});
  EXPECT_EQ(native.ssr_cost_us, 5u);
  EXPECT_EQ(native.jwt_cost_us, 0u);
}

TEST(config, bad_values_name_the_variable_and_the_value) {
  const std::map<std::string, std::string> bad = {{"PORT", "abc"},
                                                  {"PORT", "65536"},
                                                  {"HOST", "example.com"},
                                                  {"KNIT_MODE", "Pooled"},
                                                  {"KNIT_COST_PROFILE", "node"},
                                                  {"KNIT_SSR_COST_US", "-1"},
                                                  {"KNIT_JWT_COST_US", "0x10"},
                                                  {"KNIT_MAX_CONNECTIONS", "0"},
                                                  {"KNIT_IDLE_TIMEOUT_MS", "1.5"}};
  for (const auto& [name, value] : bad) {
    const std::string message = error_of({{name, value}});
    EXPECT_NE(message.find(name), std::string::npos) << name << "=" << value << ": " << message;
    EXPECT_NE(message.find("\"" + value + "\""), std::string::npos) << message;
  }
  for (const char* value : {"+5", " 5", "5 ", "99999999999999999999999", "10000001"}) {
    EXPECT_NE(error_of({{"KNIT_SSR_COST_US", value}}), "") << value;
  }
}

TEST(config, admission_is_on_by_default) {
  const server_config cfg = parse({});
  EXPECT_EQ(cfg.max_queue_delay, std::chrono::milliseconds(250));
  EXPECT_EQ(cfg.max_queued, 4096u);
}

TEST(config, admission_settings_and_zero_means_off) {
  const server_config set = parse({{"KNIT_MAX_QUEUE_MS", "40"}, {"KNIT_MAX_QUEUED", "12"}});
  EXPECT_EQ(set.max_queue_delay, std::chrono::milliseconds(40));
  EXPECT_EQ(set.max_queued, 12u);
  const server_config off = parse({{"KNIT_MAX_QUEUE_MS", "0"}, {"KNIT_MAX_QUEUED", "0"}});
  EXPECT_EQ(off.max_queue_delay, std::chrono::milliseconds(0));
  EXPECT_EQ(off.max_queued, 0u);
  const server_config empty = parse({{"KNIT_MAX_QUEUE_MS", ""}, {"KNIT_MAX_QUEUED", ""}});
  EXPECT_EQ(empty.max_queue_delay, std::chrono::milliseconds(250));
  EXPECT_EQ(empty.max_queued, 4096u);
}

TEST(config, the_queue_wait_deadline_follows_the_delay_bound_unless_set) {
  EXPECT_EQ(parse({}).max_queue_wait(), std::chrono::milliseconds(350));  // 1.4 x 250
  EXPECT_EQ(parse({{"KNIT_MAX_QUEUE_MS", "100"}}).max_queue_wait(), std::chrono::milliseconds(140));
  EXPECT_EQ(parse({{"KNIT_MAX_QUEUE_MS", "1"}}).max_queue_wait(), std::chrono::microseconds(1400));
  EXPECT_EQ(parse({{"KNIT_MAX_QUEUE_MS", "0"}}).max_queue_wait(), std::chrono::milliseconds(0));
  const server_config set = parse({{"KNIT_MAX_QUEUE_WAIT_MS", "900"}});
  EXPECT_EQ(set.max_queue_wait(), std::chrono::milliseconds(900));
  EXPECT_EQ(set.max_queue_delay, std::chrono::milliseconds(250));
  EXPECT_EQ(parse({{"KNIT_MAX_QUEUE_WAIT_MS", "0"}}).max_queue_wait(),
            std::chrono::milliseconds(0));  // no deadline, the estimate's rule unchanged
  for (const char* value : {"-1", "0.5", "3600001", "soon"}) {
    const std::string message = error_of({{"KNIT_MAX_QUEUE_WAIT_MS", value}});
    EXPECT_NE(message.find("KNIT_MAX_QUEUE_WAIT_MS"), std::string::npos)
        << value << ": " << message;
  }
}

TEST(config, bad_admission_values_name_the_variable) {
  for (const char* value : {"-1", "0.5", "250ms", "3600001", " 1"}) {
    const std::string message = error_of({{"KNIT_MAX_QUEUE_MS", value}});
    EXPECT_NE(message.find("KNIT_MAX_QUEUE_MS"), std::string::npos) << value << ": " << message;
  }
  for (const char* value : {"-1", "1e3", "1000001", "many"}) {
    const std::string message = error_of({{"KNIT_MAX_QUEUED", value}});
    EXPECT_NE(message.find("KNIT_MAX_QUEUED"), std::string::npos) << value << ": " << message;
  }
}

TEST(config, stop_grace_never_exceeds_the_stop_timeout) {
  using std::chrono::milliseconds;
  EXPECT_EQ(server_config{}.stop_grace, milliseconds(5000));
  EXPECT_EQ(stop_grace_for(milliseconds(10'000)), milliseconds(5000));  // the default timeout
  EXPECT_EQ(stop_grace_for(milliseconds(500)), milliseconds(500));
  EXPECT_EQ(stop_grace_for(milliseconds(0)), milliseconds(5000));  // 0: no bound
}

TEST(config, hosts_default_to_one_and_combine_with_inline_and_asio) {
  EXPECT_EQ(parse({}).hosts, 1u);
  EXPECT_EQ(parse({{"KNIT_HOSTS", ""}}).hosts, 1u);
  EXPECT_EQ(parse({{"KNIT_MODE", "inline"}, {"KNIT_HOSTS", "4"}}).hosts, 4u);
  EXPECT_EQ(parse({{"KNIT_MODE", "asio"}, {"KNIT_HOSTS", "1024"}}).hosts, 1024u);
  // One host is today's single loop in every mode, the knit pool's included.
  for (const char* mode : {"pooled", "auto", "multi"}) {
    EXPECT_EQ(parse({{"KNIT_MODE", mode}, {"KNIT_HOSTS", "1"}}).hosts, 1u) << mode;
  }
}

TEST(config, bad_hosts_name_the_variable_and_the_value) {
  for (const char* value : {"0", "-2", "1025", "two", "2 "}) {
    const std::string message = error_of({{"KNIT_MODE", "inline"}, {"KNIT_HOSTS", value}});
    EXPECT_NE(message.find("KNIT_HOSTS=\"" + std::string(value) + "\""), std::string::npos)
        << value << ": " << message;
  }
  EXPECT_NE(error_of({{"KNIT_MODE", "multi"}, {"KNIT_HOSTS", "2"}})
                .find("expected 1 with KNIT_MODE=multi"),
            std::string::npos);
  for (const char* mode : {"pooled", "auto"}) {
    EXPECT_EQ(parse({{"KNIT_MODE", mode}, {"KNIT_HOSTS", "64"}}).hosts, 64u) << mode;
    const std::string message = error_of({{"KNIT_MODE", mode}, {"KNIT_HOSTS", "65"}});
    EXPECT_NE(message.find("expected at most 64 with KNIT_MODE=" + std::string(mode)),
              std::string::npos)
        << message;
  }
}

TEST(config, mode_names) {
  EXPECT_EQ(to_string(exec_mode::inline_host), "inline");
  EXPECT_EQ(to_string(exec_mode::pooled), "pooled");
  EXPECT_EQ(to_string(exec_mode::asio_pool), "asio");
  EXPECT_EQ(to_string(exec_mode::multi_thread), "multi");
  EXPECT_EQ(to_string(exec_mode::auto_offload), "auto");
}

TEST(config, every_mode_parses_from_its_name) {
  for (exec_mode m : {exec_mode::inline_host, exec_mode::pooled, exec_mode::asio_pool,
                      exec_mode::multi_thread, exec_mode::auto_offload}) {
    EXPECT_EQ(parse({{"KNIT_MODE", std::string(to_string(m))}}).mode, m) << to_string(m);
  }
  EXPECT_TRUE(uses_knit_pool(exec_mode::pooled));
  EXPECT_TRUE(uses_knit_pool(exec_mode::auto_offload));
  EXPECT_FALSE(uses_knit_pool(exec_mode::asio_pool));
  EXPECT_FALSE(uses_knit_pool(exec_mode::multi_thread));
  EXPECT_FALSE(uses_knit_pool(exec_mode::inline_host));
  try {
    parse({{"KNIT_MODE", "threads"}});
    ADD_FAILURE() << "KNIT_MODE=threads was accepted";
  } catch (const server_config_error& e) {
    EXPECT_NE(std::string(e.what()).find("inline, pooled, asio, multi or auto"), std::string::npos)
        << e.what();
  }
}

TEST(config, memory_budget_and_sndbuf) {
  const server_config defaults = parse({});
  EXPECT_EQ(defaults.memory_budget_mb, std::nullopt);  // derived at start-up
  EXPECT_EQ(defaults.sndbuf_kb, 64u);
  const server_config set = parse({{"KNIT_MEMORY_BUDGET_MB", "4"}, {"KNIT_SNDBUF_KB", "16"}});
  EXPECT_EQ(set.memory_budget_mb, 4u);
  EXPECT_EQ(set.sndbuf_kb, 16u);
  EXPECT_EQ(parse({{"KNIT_SNDBUF_KB", "0"}}).sndbuf_kb, 0u);  // the kernel's autotuning
  EXPECT_EQ(parse({{"KNIT_MEMORY_BUDGET_MB", ""}}).memory_budget_mb, std::nullopt);
}

TEST(config, bad_memory_budget_and_sndbuf_name_the_variable_and_the_value) {
  EXPECT_EQ(error_of({{"KNIT_MEMORY_BUDGET_MB", "0"}}),
            R"(KNIT_MEMORY_BUDGET_MB="0": expected an integer from 1 to 1048576)");
  EXPECT_EQ(error_of({{"KNIT_MEMORY_BUDGET_MB", "1GB"}}),
            R"(KNIT_MEMORY_BUDGET_MB="1GB": expected an integer from 1 to 1048576)");
  EXPECT_EQ(error_of({{"KNIT_MEMORY_BUDGET_MB", "-5"}}),
            R"(KNIT_MEMORY_BUDGET_MB="-5": expected an integer from 1 to 1048576)");
  EXPECT_EQ(error_of({{"KNIT_SNDBUF_KB", "3"}}),
            R"(KNIT_SNDBUF_KB="3": expected 0 (the kernel's autotuning) or an integer from 4 )"
            R"(to 65536)");
  EXPECT_EQ(error_of({{"KNIT_SNDBUF_KB", "65537"}}),
            R"(KNIT_SNDBUF_KB="65537": expected 0 (the kernel's autotuning) or an integer from 4 )"
            R"(to 65536)");
}

TEST(config, isolation_is_thread_by_default_and_process_needs_pooled_mode) {
  EXPECT_EQ(parse({}).worker_isolation, isolation::thread);
  EXPECT_EQ(parse({{"KNIT_ISOLATION", ""}}).worker_isolation, isolation::thread);
  EXPECT_EQ(parse({{"KNIT_ISOLATION", "thread"}, {"KNIT_MODE", "inline"}}).worker_isolation,
            isolation::thread);
  EXPECT_EQ(parse({{"KNIT_ISOLATION", "process"}}).worker_isolation, isolation::process);
  EXPECT_EQ(parse({{"KNIT_ISOLATION", "process"}, {"KNIT_HOSTS", "2"}}).hosts, 2u);
  EXPECT_EQ(error_of({{"KNIT_ISOLATION", "processes"}}),
            R"(KNIT_ISOLATION="processes": expected thread or process)");
  for (const char* mode : {"inline", "asio", "multi", "auto"}) {
    const std::string message = error_of({{"KNIT_ISOLATION", "process"}, {"KNIT_MODE", mode}});
    EXPECT_NE(message.find(R"(KNIT_ISOLATION="process": expected it only with KNIT_MODE=pooled)"),
              std::string::npos)
        << message;
  }
  EXPECT_EQ(to_string(isolation::process), "process");
  EXPECT_EQ(to_string(isolation::thread), "thread");
}

}  // namespace
}  // namespace knit_server

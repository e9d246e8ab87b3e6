#include "knit/options.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "knit/pool.hpp"

namespace {

// Sets KNIT_* variables for one test and clears them afterwards.
class env_test : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* n :
         {"KNIT_THREADS", "KNIT_SPIN", "KNIT_PARK", "KNIT_DOORBELL", "KNIT_STEAL",
          "KNIT_MAX_SPINNERS", "KNIT_WAKE_COST", "KNIT_QUEUE_CAPACITY", "KNIT_MAX_PENDING",
          "KNIT_WORKER_CPUS", "KNIT_STUCK_MS", "KNIT_STOP_TIMEOUT_MS", "KNIT_WORKER_SANDBOX",
          "KNIT_PROCESS_LANES", "KNIT_WORKER_MEMORY_MB"})
      ::unsetenv(n);
  }
  static void set(const char* n, const char* v) { ::setenv(n, v, 1); }
  static std::string error_of() {
    try {
      knit::pool_options::from_env();
    } catch (const knit::config_error& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(env_test, unset_and_empty_mean_defaults) {
  set("KNIT_SPIN", "");
  auto o = knit::pool_options::from_env();
  EXPECT_EQ(o.threads, 1u);
  EXPECT_FALSE(o.spin_us.has_value());
  EXPECT_EQ(o.park_ms, 0u);
  EXPECT_TRUE(o.doorbell);
  EXPECT_TRUE(o.steal);
  EXPECT_EQ(o.max_pending, 0u);
}

TEST_F(env_test, stuck_and_stop_timeout_have_documented_defaults_and_bounds) {
  auto o = knit::pool_options::from_env();
  EXPECT_EQ(o.stuck_after, std::chrono::milliseconds(30'000))
      << "from_env turns stuck detection on";
  EXPECT_EQ(o.stop_timeout, std::chrono::milliseconds(10'000));
  EXPECT_EQ(knit::pool_options{}.stuck_after.count(), 0) << "the struct leaves it off";
  set("KNIT_STUCK_MS", "250");
  set("KNIT_STOP_TIMEOUT_MS", "0");
  o = knit::pool_options::from_env();
  EXPECT_EQ(o.stuck_after, std::chrono::milliseconds(250));
  EXPECT_EQ(o.stop_timeout.count(), 0);
  EXPECT_NE(o.describe().find("stuck_ms=250"), std::string::npos);
  EXPECT_NE(o.describe().find("stop_timeout_ms=0(unbounded)"), std::string::npos);
  set("KNIT_STUCK_MS", "-1");
  EXPECT_NE(error_of().find("KNIT_STUCK_MS"), std::string::npos);
  set("KNIT_STUCK_MS", "");
  set("KNIT_STOP_TIMEOUT_MS", "86400001");
  EXPECT_NE(error_of().find("KNIT_STOP_TIMEOUT_MS"), std::string::npos);
}

TEST_F(env_test, reads_every_variable) {
  set("KNIT_THREADS", "4");
  set("KNIT_SPIN", "200");
  set("KNIT_PARK", "1");
  set("KNIT_DOORBELL", "0");
  set("KNIT_STEAL", "0");
  set("KNIT_MAX_SPINNERS", "1");
  set("KNIT_WAKE_COST", "0");
  set("KNIT_QUEUE_CAPACITY", "64");
  set("KNIT_MAX_PENDING", "10");
  set("KNIT_WORKER_CPUS", "0,2-3");
  auto o = knit::pool_options::from_env();
  EXPECT_EQ(o.threads, 4u);
  EXPECT_EQ(o.spin_us, 200u);
  EXPECT_EQ(o.park_ms, 1u);
  EXPECT_FALSE(o.doorbell);
  EXPECT_FALSE(o.steal);
  EXPECT_EQ(o.max_spinners, 1u);
  EXPECT_EQ(o.wake_cost_us, 0u);
  EXPECT_EQ(o.queue_capacity, 64u);
  EXPECT_EQ(o.max_pending, 10u);
  EXPECT_EQ(o.worker_cpus, (std::vector<int>{0, 2, 3}));
  EXPECT_NE(o.describe().find("threads=4"), std::string::npos);
}

TEST_F(env_test, bad_values_name_the_variable_and_value) {
  set("KNIT_THREADS", "four");
  EXPECT_NE(error_of().find("KNIT_THREADS='four'"), std::string::npos) << error_of();
  set("KNIT_THREADS", "0");
  EXPECT_NE(error_of().find("KNIT_THREADS='0'"), std::string::npos);
  set("KNIT_THREADS", "-1");
  EXPECT_NE(error_of().find("KNIT_THREADS"), std::string::npos);
  set("KNIT_THREADS", "2");
  set("KNIT_SPIN", "5x");
  EXPECT_NE(error_of().find("KNIT_SPIN='5x'"), std::string::npos);
  ::unsetenv("KNIT_SPIN");
  set("KNIT_DOORBELL", "yes");
  EXPECT_NE(error_of().find("KNIT_DOORBELL='yes'"), std::string::npos);
  set("KNIT_DOORBELL", "1");
  set("KNIT_WORKER_CPUS", "3-1");
  EXPECT_NE(error_of().find("KNIT_WORKER_CPUS"), std::string::npos);
}

TEST_F(env_test, doorbell_off_needs_a_park_timeout) {
  set("KNIT_DOORBELL", "0");
  EXPECT_NE(error_of().find("park_ms > 0"), std::string::npos) << error_of();
  set("KNIT_PARK", "1");
  EXPECT_EQ(error_of(), "");
}

// The library reads the environment only in from_env(), when the program calls it: a pool
// built from options set in code keeps them whatever KNIT_* says (the process variables are
// knit-server's, read by the server, never by the library).
TEST_F(env_test, a_pool_built_from_options_in_code_reads_no_environment) {
  set("KNIT_THREADS", "3");
  set("KNIT_MAX_PENDING", "5");
  set("KNIT_STUCK_MS", "7");
  set("KNIT_WORKER_SANDBOX", "strict");
  set("KNIT_PROCESS_LANES", "7");
  set("KNIT_WORKER_MEMORY_MB", "64");
  knit::pool_options o;
  o.threads = 2;
  o.process.lanes = 1;
  knit::pool p(o);
  EXPECT_EQ(p.options().threads, 2u);
  EXPECT_EQ(p.stats().threads, 2u);
  EXPECT_EQ(p.options().max_pending, 0u);
  EXPECT_EQ(p.options().stuck_after.count(), 0);
  EXPECT_EQ(p.options().process.lanes, 1u);
  EXPECT_EQ(p.options().process.sandbox, knit::process_sandbox::off);
  EXPECT_EQ(p.options().process.memory_limit, 0u);
}

TEST(pool_options_validate, rejects_out_of_range) {
  knit::pool_options o;
  o.threads = 0;
  EXPECT_THROW(o.validate(), knit::config_error);
  o.threads = 1;
  o.queue_capacity = 0;
  EXPECT_THROW(o.validate(), knit::config_error);
}

}  // namespace

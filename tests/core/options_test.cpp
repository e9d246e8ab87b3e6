#include "knit/options.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

// Sets KNIT_* variables for one test and clears them afterwards.
class env_test : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* n : {"KNIT_THREADS", "KNIT_SPIN", "KNIT_PARK", "KNIT_DOORBELL", "KNIT_STEAL", "KNIT_MAX_SPINNERS", "KNIT_WAKE_COST",
                          "KNIT_QUEUE_CAPACITY", "KNIT_MAX_PENDING", "KNIT_WORKER_CPUS"})
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

TEST(pool_options_validate, rejects_out_of_range) {
  knit::pool_options o;
  o.threads = 0;
  EXPECT_THROW(o.validate(), knit::config_error);
  o.threads = 1;
  o.queue_capacity = 0;
  EXPECT_THROW(o.validate(), knit::config_error);
}

}  // namespace

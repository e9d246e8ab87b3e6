// worker_nice / worker_sched: the options and their KNIT_* variables, the settings as seen
// from inside a task (first workers and a replacement worker), the host left alone, and a
// setting the worker may not apply failing the constructor with a message naming it.
#include <gtest/gtest.h>

#include <linux/capability.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include "knit/pool.hpp"
#include "support/gate.hpp"
#include "support/pool_helpers.hpp"

namespace {

using namespace std::chrono_literals;
using knit_test::drain_until;

struct seen {
  int nice = -100;
  int policy = -1;
};

// What the calling thread's nice value and scheduling class are.
seen here() {
  errno = 0;
  seen s;
  s.nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
  s.policy = ::sched_getscheduler(0);
  return s;
}

// Runs here() on a worker and returns what it saw.
seen on_a_worker(knit::pool& p) {
  seen out;
  bool done = false;
  EXPECT_FALSE(p.submit([](int) { return here(); }, 0,
                        [&](knit::result<seen> r) {
                          EXPECT_TRUE(r.ok());
                          if (r.ok()) out = r.value();
                          done = true;
                        }));
  EXPECT_TRUE(drain_until(p, [&] { return done; }));
  return out;
}

TEST(worker_sched_option, defaults_change_nothing) {
  knit::pool_options o;
  EXPECT_EQ(o.worker_nice, 0);
  EXPECT_EQ(o.worker_sched, knit::sched_class::other);
  EXPECT_NE(o.describe().find("worker_nice=0(inherited) worker_sched=other(inherited)"),
            std::string::npos)
      << o.describe();
  const seen host = here();
  knit::pool p(o);
  const seen worker = on_a_worker(p);
  EXPECT_EQ(worker.nice, host.nice);
  EXPECT_EQ(worker.policy, host.policy);
}

TEST(worker_sched_option, validate_names_the_variable) {
  knit::pool_options o;
  o.worker_nice = 20;
  try {
    o.validate();
    ADD_FAILURE() << "worker_nice=20 accepted";
  } catch (const knit::config_error& e) {
    EXPECT_NE(std::string(e.what()).find("KNIT_WORKER_NICE"), std::string::npos) << e.what();
  }
  o.worker_nice = -1;
  EXPECT_THROW(o.validate(), knit::config_error);
  o.worker_nice = 19;
  EXPECT_NO_THROW(o.validate());
  o.worker_sched = static_cast<knit::sched_class>(7);
  try {
    o.validate();
    ADD_FAILURE() << "worker_sched=7 accepted";
  } catch (const knit::config_error& e) {
    EXPECT_NE(std::string(e.what()).find("KNIT_WORKER_SCHED"), std::string::npos) << e.what();
  }
}

TEST(worker_sched_option, read_from_the_environment) {
  ::setenv("KNIT_WORKER_NICE", "10", 1);
  ::setenv("KNIT_WORKER_SCHED", "batch", 1);
  auto o = knit::pool_options::from_env();
  EXPECT_EQ(o.worker_nice, 10);
  EXPECT_EQ(o.worker_sched, knit::sched_class::batch);
  EXPECT_NE(o.describe().find("worker_nice=10 worker_sched=batch"), std::string::npos)
      << o.describe();
  ::setenv("KNIT_WORKER_SCHED", "idle", 1);
  EXPECT_EQ(knit::pool_options::from_env().worker_sched, knit::sched_class::idle);
  ::setenv("KNIT_WORKER_SCHED", "other", 1);
  EXPECT_EQ(knit::pool_options::from_env().worker_sched, knit::sched_class::other);
  ::setenv("KNIT_WORKER_SCHED", "fifo", 1);
  EXPECT_THROW(knit::pool_options::from_env(), knit::config_error);
  ::unsetenv("KNIT_WORKER_SCHED");
  ::setenv("KNIT_WORKER_NICE", "20", 1);
  try {
    (void)knit::pool_options::from_env();
    ADD_FAILURE() << "KNIT_WORKER_NICE=20 accepted";
  } catch (const knit::config_error& e) {
    EXPECT_NE(std::string(e.what()).find("KNIT_WORKER_NICE='20'"), std::string::npos) << e.what();
  }
  ::unsetenv("KNIT_WORKER_NICE");
}

TEST(worker_sched, nice_and_batch_show_inside_a_task_and_not_on_the_host) {
  const seen host = here();
  knit::pool_options o;
  o.threads = 2;
  o.worker_nice = 10;
  o.worker_sched = knit::sched_class::batch;
  knit::pool p(o);
  for (int i = 0; i < 8; ++i) {  // both workers, whichever takes the call
    const seen w = on_a_worker(p);
    EXPECT_EQ(w.nice, 10);
    EXPECT_EQ(w.policy, SCHED_BATCH);
  }
  const seen after = here();
  EXPECT_EQ(after.nice, host.nice) << "the host thread keeps its own";
  EXPECT_EQ(after.policy, host.policy);
  EXPECT_EQ(p.stats().totals().sched_failures, 0u);
}

TEST(worker_sched, idle_class_shows_inside_a_task) {
  knit::pool_options o;
  o.worker_sched = knit::sched_class::idle;
  knit::pool p(o);
  EXPECT_EQ(on_a_worker(p).policy, SCHED_IDLE);
}

TEST(worker_sched, a_replacement_worker_applies_them_too) {
  knit::pool_options o;
  o.worker_nice = 7;
  o.worker_sched = knit::sched_class::batch;
  o.stuck_after = 100ms;
  auto g = std::make_shared<knit_test::gate>();
  {
    knit::pool p(o);
    std::optional<std::error_code> stuck;
    ASSERT_FALSE(p.submit(
        [g](int) {
          g->wait();
          return 0;
        },
        0, [&](knit::result<int> r) { stuck = r.ok() ? std::error_code{} : r.error(); }));
    ASSERT_TRUE(drain_until(p, [&] { return stuck.has_value(); }));
    EXPECT_EQ(*stuck, knit::errc::stuck);
    ASSERT_EQ(p.stats().workers_replaced, 1u);
    const seen w = on_a_worker(p);  // the only live worker is the replacement
    EXPECT_EQ(w.nice, 7);
    EXPECT_EQ(w.policy, SCHED_BATCH);
    g->open.store(true);
    (void)p.shutdown(knit::shutdown_mode::drain, std::chrono::steady_clock::now() + 10s);
  }
  EXPECT_TRUE(knit_test::eventually([&] { return g->returned.load() == 1; }));
}

// Drops CAP_SYS_NICE from the calling thread's effective set (capabilities are per thread
// on Linux; glibc does not broadcast a raw capset). Threads it creates inherit the drop.
bool drop_sys_nice_here() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  data[CAP_SYS_NICE / 32].effective &= ~(1u << (CAP_SYS_NICE % 32));
  return ::syscall(SYS_capset, &header, data) == 0;
}

// A nice below the thread's current one needs CAP_SYS_NICE (or RLIMIT_NICE): on a host
// thread at nice 5 without it, worker_nice = 1 cannot be applied, and the constructor says so.
TEST(worker_sched, a_setting_the_worker_may_not_apply_fails_the_constructor) {
  std::string outcome;
  std::thread host([&] {  // a thread of its own: its nice and capabilities die with it
    const auto self = static_cast<id_t>(::gettid());
    if (!drop_sys_nice_here() || ::setpriority(PRIO_PROCESS, self, 5) != 0) {
      outcome = "skip: cannot drop CAP_SYS_NICE or raise nice here";
      return;
    }
    if (::setpriority(PRIO_PROCESS, self, 4) == 0) {  // RLIMIT_NICE allows it: nothing to provoke
      outcome = "skip: RLIMIT_NICE lets this thread lower its nice";
      return;
    }
    knit::pool_options o;
    o.threads = 2;
    o.worker_nice = 1;
    try {
      knit::pool p(o);
      outcome = "constructed";
    } catch (const std::system_error& e) {
      outcome = e.what();
    }
  });
  host.join();
  if (outcome.rfind("skip: ", 0) == 0) GTEST_SKIP() << outcome;
  EXPECT_NE(outcome.find("could not apply worker_nice=1 (KNIT_WORKER_NICE)"), std::string::npos)
      << outcome;
  EXPECT_NE(outcome.find("CAP_SYS_NICE"), std::string::npos) << outcome;
}

}  // namespace

// submit_process through a knit::asio_host: the result, a crash's own error code included,
// arrives on the io_context's thread, and io_context::run() returns once nothing is pending.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <thread>

#include "knit/asio.hpp"
#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/process_helpers.hpp"

namespace {

TEST(process_asio_test, results_and_crashes_arrive_on_the_io_context_thread) {
  knit::pool pool(knit_test::threads(1));
  boost::asio::io_context io;
  knit::asio_host host(io, pool);
  std::optional<knit::result<std::string>> good, crash;
  std::thread::id good_thread, crash_thread;
  ASSERT_FALSE(knit::submit_process(host, "echo", "over asio", [&](knit::result<std::string> r) {
    good_thread = std::this_thread::get_id();
    good.emplace(std::move(r));
  }));
  ASSERT_FALSE(knit::submit_process(host, "abort", "", [&](knit::result<std::string> r) {
    crash_thread = std::this_thread::get_id();
    crash.emplace(std::move(r));
  }));
  io.run();  // returns when both handlers have run
  ASSERT_TRUE(good && crash);
  ASSERT_TRUE(good->ok()) << knit::failure_message(*good);
  EXPECT_EQ(good->value(), "over asio");
  EXPECT_EQ(crash->error(), knit::errc::worker_crashed);
  EXPECT_NE(knit::failure_message(*crash).find("SIGABRT"), std::string::npos);
  EXPECT_EQ(good_thread, std::this_thread::get_id());
  EXPECT_EQ(crash_thread, std::this_thread::get_id());
}

}  // namespace

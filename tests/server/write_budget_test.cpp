// write_budget.hpp (the reserve/release policy and its "over budget?") and memory_budget.hpp
// (where the budget's size and the per-connection kernel cap come from).
#include "limits/write_budget.hpp"  // first: the header must be self-contained

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "limits/memory_budget.hpp"

namespace knit_server {
namespace {

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * kKiB;

TEST(write_budget, cost_is_the_response_plus_what_the_kernel_can_queue_of_it) {
  EXPECT_EQ(write_budget::cost(0, 128 * kKiB), 0u);
  EXPECT_EQ(write_budget::cost(200, 128 * kKiB), 400u);  // small: all of it fits the queue
  EXPECT_EQ(write_budget::cost(787'487, 128 * kKiB), 787'487u + 128 * kKiB);
}

TEST(write_budget, over_only_once_more_than_the_limit_is_parked) {
  write_budget budget(1 * kMiB, 64 * kKiB);
  EXPECT_FALSE(budget.over());
  auto a = budget.reserve(400 * kKiB);  // 464 KiB
  EXPECT_EQ(budget.parked(), 464 * kKiB);
  EXPECT_FALSE(budget.over());
  auto b = budget.reserve(496 * kKiB);  // 560 KiB: exactly 1 MiB parked, not over it
  EXPECT_EQ(budget.parked(), 1 * kMiB);
  EXPECT_FALSE(budget.over());
  auto c = budget.reserve(1);
  EXPECT_TRUE(budget.over());
  c.release();
  EXPECT_FALSE(budget.over());
  a.release();
  b.release();
  EXPECT_EQ(budget.parked(), 0u);
}

TEST(write_budget, a_reservation_gives_back_once_whether_released_moved_or_destroyed) {
  write_budget budget(1 * kMiB, 64 * kKiB);
  {
    auto a = budget.reserve(100 * kKiB);
    EXPECT_EQ(a.bytes(), 164 * kKiB);
    write_budget::reservation moved = std::move(a);
    EXPECT_EQ(a.bytes(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty
    a.release();               // nothing to give back
    EXPECT_EQ(budget.parked(), 164 * kKiB);
    moved.release();
    moved.release();  // twice: still once
    EXPECT_EQ(budget.parked(), 0u);
    auto b = budget.reserve(10);
    EXPECT_EQ(budget.parked(), 20u);
  }  // b destroyed
  EXPECT_EQ(budget.parked(), 0u);
  write_budget::reservation slot = budget.reserve(1000);
  slot = budget.reserve(2000);  // assigning gives the old one back first
  EXPECT_EQ(budget.parked(), 4000u);
}

TEST(write_budget, try_reserve_takes_only_what_fits_under_the_limit) {
  write_budget budget(1 * kMiB, 64 * kKiB);
  auto a = budget.try_reserve(496 * kKiB);  // 560 KiB
  ASSERT_TRUE(a);
  EXPECT_FALSE(budget.try_reserve(420 * kKiB));         // 484 KiB more would be 1 MiB + 20 KiB
  EXPECT_EQ(budget.parked(), 560 * kKiB);               // the refusal counted nothing
  auto b = budget.try_reserve(400 * kKiB - 32 * kKiB);  // 432 KiB: 992 KiB in all
  ASSERT_TRUE(b);
  a->release();
  EXPECT_TRUE(budget.try_reserve(400 * kKiB));
}

TEST(write_budget, over_keeps_room_for_the_largest_page) {
  // 787,487 + 32 KiB = 820,255 B per largest page: two fit in 2 MiB, a third does not.
  const std::size_t page = 787'487;
  write_budget budget(2 * kMiB, 32 * kKiB, write_budget::cost(page, 32 * kKiB));
  EXPECT_EQ(budget.writes_admitted(page), 2u);
  auto r1 = budget.try_reserve(page);
  ASSERT_TRUE(r1);
  EXPECT_FALSE(budget.over());  // room for one more
  auto r2 = budget.try_reserve(page);
  ASSERT_TRUE(r2);
  EXPECT_TRUE(budget.over());                // less than one page of room: shed at admission
  EXPECT_FALSE(budget.try_reserve(page));    // and a page admitted earlier is refused
  EXPECT_TRUE(budget.try_reserve(100'000));  // a smaller one still fits
  r1->release();
  EXPECT_FALSE(budget.over());
}

TEST(memory_budget, cgroup_v2_path_is_the_0_line) {
  EXPECT_EQ(cgroup_v2_path("0::/system.slice/knit.service\n"), "/system.slice/knit.service");
  EXPECT_EQ(cgroup_v2_path("4:memory:/x\n1:cpu:/\n0::/\n"), "/");
  EXPECT_EQ(cgroup_v2_path("4:memory:/x\n1:cpu:/\n"), std::nullopt);  // v1 only
  EXPECT_EQ(cgroup_v2_path(""), std::nullopt);
}

TEST(memory_budget, memory_max_is_a_number_or_no_limit) {
  EXPECT_EQ(parse_memory_max("536870912\n"), 536870912u);
  EXPECT_EQ(parse_memory_max("max\n"), std::nullopt);
  EXPECT_EQ(parse_memory_max(""), std::nullopt);
  EXPECT_EQ(parse_memory_max("12k"), std::nullopt);
}

// A fake cgroup2 tree in a temporary directory.
class cgroup_tree : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "knit-cgroup-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void set_max(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(root_ / path);
    std::ofstream(root_ / path / "memory.max") << text;
  }
  std::filesystem::path root_;
};

TEST_F(cgroup_tree, the_tightest_limit_from_the_process_up_counts) {
  set_max("a", "max\n");
  set_max("a/b", "1073741824\n");
  set_max("a/b/c", "max\n");
  EXPECT_EQ(cgroup_memory_max(root_, "/a/b/c"), 1073741824u);
  set_max("a", "268435456\n");  // an ancestor tighter than the process's own level
  EXPECT_EQ(cgroup_memory_max(root_, "/a/b/c"), 268435456u);
}

TEST_F(cgroup_tree, no_limit_anywhere_or_no_files_is_none) {
  set_max("a", "max\n");
  EXPECT_EQ(cgroup_memory_max(root_, "/a"), std::nullopt);
  EXPECT_EQ(cgroup_memory_max(root_, "/not/there"), std::nullopt);
}

TEST(memory_budget, the_setting_wins_then_half_the_cgroup_then_the_fixed_default) {
  auto set = resolve_memory_budget(4, 1024 * kMiB);
  EXPECT_EQ(set.bytes, 4 * kMiB);
  EXPECT_EQ(set.origin, budget_origin::setting);
  auto cg = resolve_memory_budget(std::nullopt, 512 * kMiB);
  EXPECT_EQ(cg.bytes, 256 * kMiB);
  EXPECT_EQ(cg.origin, budget_origin::cgroup);
  auto fixed = resolve_memory_budget(std::nullopt, std::nullopt);
  EXPECT_EQ(fixed.bytes, kFixedBudgetMb * kMiB);
  EXPECT_EQ(fixed.origin, budget_origin::fixed);
}

TEST(memory_budget, kernel_cap_is_the_doubled_sndbuf_or_tcp_wmem_max) {
  EXPECT_EQ(kernel_send_cap(64, 4 * kMiB), 128 * kKiB);
  EXPECT_EQ(kernel_send_cap(64, 4 * kMiB, 100'000), 100'000u);  // what the kernel applied
  EXPECT_EQ(kernel_send_cap(0, 4 * kMiB), 4 * kMiB);            // autotuning
}

TEST(memory_budget, the_probe_reads_back_linux_doubling) {
  // Linux stores twice the value asked for (socket(7)), within net.core.wmem_max.
  const auto applied = probe_sndbuf(16);
  ASSERT_TRUE(applied.has_value());
  EXPECT_EQ(*applied, 2 * 16 * kKiB);
  EXPECT_EQ(probe_sndbuf(0), std::nullopt);
}

}  // namespace
}  // namespace knit_server

// The system-calls count a row records: perf stat's CSV output read back. (perf itself is
// exercised by the bench's own runs: attaching takes a moment no unit test should wait for.)
#include <optional>

#include <gtest/gtest.h>

#include "driver/system/syscall_counter.hpp"

namespace knit::bench {
namespace {

TEST(syscall_counter, reads_the_count_from_perf_csv) {
  EXPECT_EQ(parse_perf_syscalls("# started on Thu Dec  3 12:00:00 2026\n\n"
                                "123456,,raw_syscalls:sys_enter,2000000000,100.00,,\n"),
            123456u);
}

TEST(syscall_counter, a_count_perf_could_not_take_is_absent) {
  EXPECT_EQ(parse_perf_syscalls("<not counted>,,raw_syscalls:sys_enter,0,100.00,,\n"),
            std::nullopt);
  EXPECT_EQ(parse_perf_syscalls("<not supported>,,raw_syscalls:sys_enter,0,0.00,,\n"),
            std::nullopt);
  EXPECT_EQ(parse_perf_syscalls(""), std::nullopt);
}

}  // namespace
}  // namespace knit::bench

// The sandbox's hardening against a task gone wild (threat model: the task runs any code the
// strict sandbox allows; it must not harm the host, other calls, or the host's report):
//   - fcntl is a signal source: F_SETOWN(host) + F_SETSIG(SIGKILL) + O_ASYNC on a pipe made
//     the kernel kill the host; the filter refuses those commands (and FIOASYNC/FIOSETOWN),
//     allows the ones a task needs;
//   - a call of a foreign ABI (i386 int 0x80, x32) is a named sandbox violation, not a crash;
//   - judge_death: the kernel's word decides a violation, the region's word only names it;
//   - the region's memfd is sealed: no child can shrink it under the host's mapping;
//   - a strict child holds no capability, even when the host is root.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <ostream>
#include <string>

#include "knit/pool.hpp"
#include "knit/process.hpp"
#include "process/exit_status.hpp"
#include "process/process_helpers.hpp"
#include "process/sandbox.hpp"
#include "process/shared_region.hpp"
#include "process/unique_fd.hpp"

namespace {

using knit::detail::child_exit;
using knit::detail::death_verdict;
using knit::detail::encode_refused_call;
using knit::detail::judge_death;
using knit::detail::sandbox_abi;
using knit_test::run_one;

constexpr auto native = static_cast<std::uint32_t>(sandbox_abi::native);
constexpr auto i386 = static_cast<std::uint32_t>(sandbox_abi::i386);
constexpr auto x32 = static_cast<std::uint32_t>(sandbox_abi::x32);

child_exit exited(int code) { return {CLD_EXITED, code}; }
child_exit killed(int signal) { return {CLD_KILLED, signal}; }

// --- judge_death: every rule --------------------------------------------------------------

TEST(judge_death, exit_125_with_a_native_word_names_the_call) {
  const death_verdict v = judge_death(exited(125), encode_refused_call(native, 41));
  EXPECT_TRUE(v.sandbox_violation);
  EXPECT_EQ(v.what, "system call 41 (socket)");
}

TEST(judge_death, sigsys_is_a_violation_named_by_the_word_or_unnamed) {
  EXPECT_EQ(judge_death(killed(SIGSYS), encode_refused_call(native, 57)).what,
            "system call 57 (fork)");
  const death_verdict dumped =
      judge_death(child_exit{CLD_DUMPED, SIGSYS}, encode_refused_call(native, 57));
  EXPECT_TRUE(dumped.sandbox_violation);
  // A filter that killed (no handler ran): the word is 0.
  const death_verdict unnamed = judge_death(killed(SIGSYS), 0);
  EXPECT_TRUE(unnamed.sandbox_violation);
  EXPECT_EQ(unnamed.what, "an unnamed system call");
}

TEST(judge_death, foreign_abis_are_named_as_such) {
  EXPECT_EQ(judge_death(exited(125), encode_refused_call(i386, 20)).what,
            "system call 20 (getpid) of the i386 ABI");
  EXPECT_EQ(judge_death(exited(125), encode_refused_call(x32, 39)).what,
            "system call 39 (getpid) of the x32 ABI");
}

TEST(judge_death, a_word_with_a_bad_abi_or_an_implausible_number_names_nothing) {
  // The old message's "system call 18446744073709551614": a word of all ones.
  EXPECT_EQ(judge_death(exited(125), ~std::uint64_t{0}).what, "an unnamed system call");
  EXPECT_EQ(judge_death(exited(125), encode_refused_call(7, 41)).what, "an unnamed system call");
  EXPECT_EQ(
      judge_death(exited(125), encode_refused_call(knit::detail::sandbox_abi_unknown, 41)).what,
      "an unnamed system call");
  EXPECT_EQ(judge_death(exited(125), encode_refused_call(native, 5000)).what,
            "an unnamed system call");
  EXPECT_EQ(judge_death(exited(125), 0).what, "an unnamed system call");
  EXPECT_TRUE(judge_death(exited(125), encode_refused_call(7, 41)).sandbox_violation);
}

TEST(judge_death, a_forged_word_and_any_other_death_is_a_crash) {
  const std::uint64_t forged = encode_refused_call(native, 41);
  const death_verdict segv = judge_death(killed(SIGSEGV), forged);
  EXPECT_FALSE(segv.sandbox_violation);
  EXPECT_EQ(segv.what, "killed by signal 11 (SIGSEGV)");
  EXPECT_FALSE(judge_death(killed(SIGSEGV), ~std::uint64_t{0}).sandbox_violation);
  EXPECT_FALSE(judge_death(child_exit{CLD_DUMPED, SIGABRT}, forged).sandbox_violation);
  EXPECT_FALSE(judge_death(killed(SIGKILL), forged).sandbox_violation);
  const death_verdict exit3 = judge_death(exited(3), forged);
  EXPECT_FALSE(exit3.sandbox_violation);
  EXPECT_EQ(exit3.what, "exited with code 3");
  // Exit status 31 is SIGSYS's number, not a signal; signal 125 is not an exit.
  EXPECT_FALSE(judge_death(exited(SIGSYS), forged).sandbox_violation);
  EXPECT_FALSE(judge_death(killed(125), forged).sandbox_violation);
  // Not reaped / not known: never a violation.
  EXPECT_FALSE(judge_death(child_exit{}, forged).sandbox_violation);
}

TEST(judge_death, the_word_encoding_and_the_older_callers_reading) {
  EXPECT_EQ(encode_refused_call(i386, 20), (std::uint64_t{1} << 32) | 21);
  const auto call = knit::detail::decode_refused_call(encode_refused_call(x32, 39));
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->abi, sandbox_abi::x32);
  EXPECT_EQ(call->nr, 39u);
  // syscall_name(word - 1), as callers read the word before it had an ABI.
  EXPECT_EQ(knit::detail::syscall_name(encode_refused_call(native, 41) - 1),
            "system call 41 (socket)");
  EXPECT_EQ(knit::detail::syscall_name(encode_refused_call(i386, 20) - 1),
            "system call 20 (getpid) of the i386 ABI");
}

TEST(judge_death, exit_of_keeps_what_waitid_said) {
  siginfo_t info{};
  info.si_code = CLD_KILLED;
  info.si_status = SIGSYS;
  EXPECT_TRUE(knit::detail::exit_of(info).killed_by(SIGSYS));
  info.si_code = CLD_EXITED;
  info.si_status = 125;
  EXPECT_TRUE(knit::detail::exit_of(info).exited_with(125));
  info.si_code = CLD_STOPPED;
  EXPECT_FALSE(knit::detail::exit_of(info).known());
}

// --- the region's seals (host side) -------------------------------------------------------

TEST(region_seals, the_memfd_cannot_change_size_nor_lose_its_seals) {
  knit::detail::unique_fd memfd;
  const std::size_t arena = 8192;
  knit::detail::shared_region region =
      knit::detail::create_region(arena, 2, 0, knit::detail::region_sandbox{}, memfd);
  ASSERT_TRUE(region);
  const int seals = ::fcntl(memfd.get(), F_GET_SEALS);
  EXPECT_EQ(seals, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  EXPECT_NE(::ftruncate(memfd.get(), 0), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(::ftruncate(memfd.get(), 1 << 24), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(::fcntl(memfd.get(), F_ADD_SEALS, F_SEAL_WRITE), 0) << "F_SEAL_SEAL holds";
  struct stat st {};
  ASSERT_EQ(::fstat(memfd.get(), &st), 0);
  EXPECT_EQ(static_cast<std::size_t>(st.st_size), knit::detail::region_bytes(arena, 2));
  // Both sides still write the mapping (no F_SEAL_WRITE).
  region.header().ready = 1;
  EXPECT_EQ(region.header().ready, 1u);
}

// --- tasks in children ---------------------------------------------------------------------

class hardening_test : public testing::Test {
 protected:
  void SetUp() override { saved_ = knit_test::test_process_options(); }
  void TearDown() override { knit_test::use_process_options(saved_); }
  static void use(knit::process_sandbox sandbox) {
    knit::process_options options;
    options.sandbox = sandbox;
    options.crash_loop_crashes = 100;  // one bad call each: no backoff involved
    knit_test::use_process_options(options);
  }
  // A call that must fail as a sandbox violation naming `named`; then the host still serves.
  static void expect_violation(knit::pool& pool, const std::string& task, const std::string& in,
                               const std::string& named) {
    auto r = run_one(pool, task, in);
    ASSERT_FALSE(r.ok()) << task << " " << in << ": " << r.value();
    const std::string message = knit::failure_message(r);
    EXPECT_EQ(r.error(), knit::errc::sandbox_violation) << message;
    EXPECT_NE(message.find(named), std::string::npos) << message;
    auto after = run_one(pool, "echo", "after");
    ASSERT_TRUE(after.ok()) << knit::failure_message(after);
  }
  knit::process_options saved_;
};

// The attack itself: were F_SETOWN allowed, the kernel would SIGKILL this test process.
TEST_F(hardening_test, fcntl_cannot_aim_sigio_at_the_host) {
  use(knit::process_sandbox::strict);
  knit::pool pool(knit_test::threads(1));
  expect_violation(pool, "hardening_fcntl", "", "(fcntl)");
}

struct refused_step {
  const char* step;
  const char* named;
};
void PrintTo(const refused_step& s, std::ostream* os) { *os << s.step; }

class hardening_refused : public hardening_test,
                          public testing::WithParamInterface<refused_step> {};

TEST_P(hardening_refused, each_signal_source_command_is_a_violation) {
  use(knit::process_sandbox::strict);
  knit::pool pool(knit_test::threads(1));
  expect_violation(pool, "hardening_fcntl", GetParam().step, GetParam().named);
}

INSTANTIATE_TEST_SUITE_P(
    each_command, hardening_refused,
    testing::Values(refused_step{"setown", "(fcntl)"}, refused_step{"setown_ex", "(fcntl)"},
                    refused_step{"setsig", "(fcntl)"}, refused_step{"async", "(fcntl)"},
                    refused_step{"lease", "(fcntl)"}, refused_step{"notify", "(fcntl)"},
                    refused_step{"pipe_size", "(fcntl)"}, refused_step{"add_seals", "(fcntl)"},
                    refused_step{"ioctl_fioasync", "(ioctl)"},
                    refused_step{"ioctl_fiosetown", "(ioctl)"}),
    [](const testing::TestParamInfo<refused_step>& info) { return std::string(info.param.step); });

TEST_F(hardening_test, the_fcntl_commands_a_task_needs_are_allowed) {
  use(knit::process_sandbox::strict);
  knit::pool pool(knit_test::threads(1));
  auto r = run_one(pool, "hardening_fcntl", "allowed");
  ASSERT_TRUE(r.ok()) << knit::failure_message(r);
  EXPECT_EQ(r.value(), "ok ok ok ok ok ok ok");
}

// Whether this kernel runs i386 calls at all is asked first, of an unsandboxed child: a
// kernel without IA32 emulation (built without it, or booted with ia32_emulation=0) answers
// int 0x80 with SIGSEGV before any filter sees it. Where it runs them, the sandboxed call must
// be the named violation, and a SIGSEGV there is a failure.
TEST_F(hardening_test, an_i386_call_is_a_named_violation) {
  use(knit::process_sandbox::off);
  {
    knit::pool probe(knit_test::threads(1));
    auto unsandboxed = run_one(probe, "hardening_i386", "");
    if (!unsandboxed.ok()) {
      const std::string message = knit::failure_message(unsandboxed);
      ASSERT_EQ(unsandboxed.error(), knit::errc::worker_crashed) << message;
      ASSERT_NE(message.find("SIGSEGV"), std::string::npos) << message;
      GTEST_SKIP() << "no i386 emulation in this kernel (int 0x80 faults unsandboxed): " << message;
    }
    if (unsandboxed.value() == "not x86_64") GTEST_SKIP() << "int 0x80 is an x86-64 question";
    ASSERT_EQ(unsandboxed.value().rfind("i386 getpid: ", 0), 0u) << unsandboxed.value();
  }
  use(knit::process_sandbox::strict);
  knit::pool pool(knit_test::threads(1));
  expect_violation(pool, "hardening_i386", "", "system call 20 (getpid) of the i386 ABI");
}

TEST_F(hardening_test, an_x32_call_is_a_named_violation) {
  use(knit::process_sandbox::strict);
  knit::pool pool(knit_test::threads(1));
  expect_violation(pool, "hardening_x32", "", "system call 39 (getpid) of the x32 ABI");
}

// End to end, the host's reading of a forged word: a crash. Enabled once the host's death
// handling (host_ring.cpp check_seat, channel.cpp) decides with judge_death.
TEST_F(hardening_test, a_forged_word_then_a_segfault_is_a_crash) {
  use(knit::process_sandbox::strict);
  knit::pool pool(knit_test::threads(1));
  const knit::process_stats before = knit::current_process_stats();
  auto r = run_one(pool, "hardening_forged_word", "");
  ASSERT_FALSE(r.ok()) << r.value();
  const std::string message = knit::failure_message(r);
  EXPECT_EQ(r.error(), knit::errc::worker_crashed) << message;
  EXPECT_NE(message.find("SIGSEGV"), std::string::npos) << message;
  EXPECT_EQ(message.find("sandbox"), std::string::npos) << message;
  EXPECT_EQ(knit::current_process_stats().sandbox_kills, before.sandbox_kills);
}

// Unsandboxed (ftruncate is refused under strict, below), so only the seals stop it: had the
// child shrunk the region, the host's next read of its mapping would be a SIGBUS.
TEST_F(hardening_test, a_child_cannot_resize_the_region) {
  use(knit::process_sandbox::off);
  knit::pool pool(knit_test::threads(1));
  auto r = run_one(pool, "hardening_resize_region", "");
  ASSERT_TRUE(r.ok()) << knit::failure_message(r);
  const std::string& answer = r.value();
  EXPECT_EQ(answer.rfind("found 0", 0), std::string::npos) << "no region found: " << answer;
  EXPECT_EQ(answer.find("grow ok"), std::string::npos) << answer;
  EXPECT_EQ(answer.find("shrink ok"), std::string::npos) << answer;
  EXPECT_NE(answer.find("shrink Operation not permitted"), std::string::npos) << answer;
  for (int i = 0; i < 3; ++i) {
    auto again = run_one(pool, "echo", "after " + std::to_string(i));
    ASSERT_TRUE(again.ok()) << knit::failure_message(again);
    EXPECT_EQ(again.value(), "after " + std::to_string(i));
  }
}

// Under strict the attempt stops at its first step: the writable open of map_files (the
// child holds no memfd after mapping it), or ftruncate on one it held.
TEST_F(hardening_test, a_strict_child_may_not_even_try_to_resize_the_region) {
  use(knit::process_sandbox::strict);
  knit::pool pool(knit_test::threads(1));
  auto r = run_one(pool, "hardening_resize_region", "");
  ASSERT_FALSE(r.ok()) << r.value();
  const std::string message = knit::failure_message(r);
  EXPECT_EQ(r.error(), knit::errc::sandbox_violation) << message;
  EXPECT_TRUE(message.find("(openat)") != std::string::npos ||
              message.find("(ftruncate)") != std::string::npos)
      << message;
  auto after = run_one(pool, "echo", "after");
  ASSERT_TRUE(after.ok()) << knit::failure_message(after);
}

TEST_F(hardening_test, a_strict_child_holds_no_capability) {
  use(knit::process_sandbox::strict);
  knit::pool pool(knit_test::threads(1));
  auto r = run_one(pool, "hardening_capabilities", "");
  ASSERT_TRUE(r.ok()) << knit::failure_message(r);
  const std::string& caps = r.value();
  EXPECT_NE(caps.find("CapEff=0000000000000000"), std::string::npos) << caps;
  EXPECT_NE(caps.find("CapPrm=0000000000000000"), std::string::npos) << caps;
  EXPECT_NE(caps.find("CapInh=0000000000000000"), std::string::npos) << caps;
  EXPECT_NE(caps.find("CapAmb=0000000000000000"), std::string::npos) << caps;
  // A root child (no user namespace: the host's uid 0) dropped its bounding set too; one in
  // a user namespace of its own runs as an unmapped uid, with no capability anywhere.
  if (caps.find("Uid=0\t") != std::string::npos) {
    EXPECT_NE(caps.find("CapBnd=0000000000000000"), std::string::npos) << caps;
  }
}

// The same task unsandboxed, for a root host: the child does hold them (the test above
// means something).
TEST_F(hardening_test, an_unsandboxed_root_child_holds_capabilities) {
  if (::geteuid() != 0) GTEST_SKIP() << "not root: no capability to drop";
  use(knit::process_sandbox::off);
  knit::pool pool(knit_test::threads(1));
  auto r = run_one(pool, "hardening_capabilities", "");
  ASSERT_TRUE(r.ok()) << knit::failure_message(r);
  EXPECT_EQ(r.value().find("CapEff=0000000000000000"), std::string::npos) << r.value();
}

}  // namespace

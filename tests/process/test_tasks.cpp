// The test tasks (test_tasks.hpp). The crashing ones crash for real: a write through a null
// pointer the compiler cannot see is null, abort(), _exit(3), a stack overflow, and a task
// that scribbles over its own shared slot (found through current_child_slot, as a wild
// write would find it) before crashing or before signalling an answer it never wrote.
#include "process/test_tasks.hpp"

#include <unistd.h>
#include <atomic>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "knit/process.hpp"
#include "process/child_slot.hpp"

namespace knit_test {
namespace {

volatile std::uintptr_t null_address = 0;  // volatile: the compiler cannot prove it null

// UBSan would catch the store and exit(1) before the kernel's SIGSEGV, which is what the
// tests check: this one function is left to the hardware.
[[noreturn]] __attribute__((no_sanitize_undefined)) void write_through_null() {
  *reinterpret_cast<volatile int*>(null_address) = 1;
  std::abort();  // not reached
}

// Recurses until the stack runs out (on purpose: GCC's warning says so too); the volatile
// buffer keeps each frame real.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winfinite-recursion"
int overflow(int depth) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  return overflow(depth + 1) + frame[0];
}
#pragma GCC diagnostic pop

std::size_t parse_size(std::string_view in) { return std::stoul(std::string(in)); }

}  // namespace

void register_test_tasks() {
  knit::register_process_task("echo", [](std::string_view in) { return std::string(in); });
  knit::register_process_task("pid", [](std::string_view) { return std::to_string(::getpid()); });
  knit::register_process_task("sleep_pid", [](std::string_view in) {
    std::this_thread::sleep_for(std::chrono::milliseconds(parse_size(in)));
    return std::to_string(::getpid());
  });
  knit::register_process_task("repeat",
                              [](std::string_view in) { return std::string(parse_size(in), 'x'); });
  knit::register_process_task("throw", [](std::string_view) -> std::string {
    throw std::runtime_error("boom from the child");
  });
  knit::register_process_task("segv",
                              [](std::string_view) -> std::string { write_through_null(); });
  knit::register_process_task("abort", [](std::string_view) -> std::string { std::abort(); });
  knit::register_process_task("exit3", [](std::string_view) -> std::string { ::_exit(3); });
  knit::register_process_task("stack_overflow", [](std::string_view) -> std::string {
    return std::to_string(overflow(0));
  });
  knit::register_process_task("scribble_crash", [](std::string_view) -> std::string {
    const knit::detail::child_slot s = knit::detail::current_child_slot();
    std::memset(static_cast<void*>(s.header), 0xff, sizeof *s.header);
    std::memset(s.answer_arena, 0xff, s.arena_bytes);
    write_through_null();
  });
  // Writes a bad answer header itself, signals it, and waits to be killed: input "seq",
  // "status" or "bytes" names the word it breaks.
  knit::register_process_task("scribble_answer", [](std::string_view in) -> std::string {
    const knit::detail::child_slot s = knit::detail::current_child_slot();
    knit::detail::region_header& h = *s.header;
    // The answer_seq last, as the protocol writes it: a host that spins would otherwise
    // take a correct answer_seq written first as the answer (as it may: it cannot tell).
    h.answer_status = in == "status" ? 99 : 1;
    h.answer_bytes = in == "bytes" ? s.arena_bytes + 1 : 0;
    std::atomic_ref<std::uint64_t>(h.answer_seq)
        .store(in == "seq" ? h.request_seq + 7 : h.request_seq, std::memory_order_release);
    const std::uint64_t one = 1;
    if (::write(s.answer_fd, &one, sizeof one) != sizeof one) std::abort();
    for (;;) ::pause();
  });
}

}  // namespace knit_test

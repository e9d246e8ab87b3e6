// The test tasks (test_tasks.hpp). The crashing ones crash for real: a write through a null
// pointer the compiler cannot see is null, abort(), _exit(3), a stack overflow, and a task
// that scribbles over its own shared slot (found through current_child_slot, as a wild
// write would find it) before crashing or before signalling an answer it never wrote.
#include "process/test_tasks.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include <chrono>
#include <cstddef>
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

// What a call returned, in words: "ok" or the errno's text (a task that the sandbox lets
// through reports what the kernel said instead of being stopped).
std::string outcome(long r) { return r >= 0 ? "ok" : std::strerror(errno); }

}  // namespace

// The tasks a sandbox refuses, and those it allows (a thread, a read-only open, memory).
void register_sandbox_tasks() {
  knit::register_process_task("connect", [](std::string_view) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return "socket: " + outcome(fd);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(9);  // discard: nothing listens; connect is refused
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const std::string r = outcome(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to));
    ::close(fd);
    return "connect: " + r;
  });
  knit::register_process_task("exec_sh", [](std::string_view) {
    char sh[] = "/bin/sh", c[] = "-c", cmd[] = "exit 0";
    char* argv[] = {sh, c, cmd, nullptr};
    ::execve("/bin/sh", argv, environ);
    return "execve: " + std::string(std::strerror(errno));
  });
  knit::register_process_task("fork", [](std::string_view) {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(0);
    if (pid < 0) return "fork: " + std::string(std::strerror(errno));
    ::waitpid(pid, nullptr, 0);
    return std::string("forked");
  });
  knit::register_process_task("open_write", [](std::string_view) {
    const int fd = ::open("/etc/passwd", O_WRONLY | O_CLOEXEC);
    const std::string r = outcome(fd);
    if (fd >= 0) ::close(fd);
    return "open: " + r;
  });
  knit::register_process_task("open_read", [](std::string_view) {
    const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    char buf[64];
    const long n = fd >= 0 ? ::read(fd, buf, sizeof buf) : -1;
    if (fd >= 0) ::close(fd);
    return n > 0 ? std::string("read") : "open: " + outcome(fd);
  });
  knit::register_process_task("allocate", [](std::string_view in) {
    std::string big(parse_size(in), 'x');  // touched: every page is written
    return std::to_string(big.size());
  });
  knit::register_process_task("thread", [](std::string_view) {
    std::string out;
    std::thread t([&out] { out = "joined"; });
    t.join();
    return out;
  });
}

void register_test_tasks() {
  knit::register_process_task("echo", [](std::string_view in) { return std::string(in); });
  knit::register_process_task("pid", [](std::string_view) { return std::to_string(::getpid()); });
  // Writes its input and a newline to its stderr (the host forwards it to its log sink),
  // returns its pid.
  knit::register_process_task("say", [](std::string_view in) {
    const std::string line = std::string(in) + "\n";
    if (::write(2, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      throw std::runtime_error("say: short write");
    }
    return std::to_string(::getpid());
  });
  knit::register_process_task("sleep_pid", [](std::string_view in) {
    std::this_thread::sleep_for(std::chrono::milliseconds(parse_size(in)));
    return std::to_string(::getpid());
  });
  // Waits (up to 10 s) until the host writes 'g' over the first byte of its request, in the
  // shared request arena the task reads: a gate the test opens at the moment it chooses.
  knit::register_process_task("gate", [](std::string_view in) {
    if (in.empty()) return std::string("no gate");
    char& first = const_cast<char&>(in.front());
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::atomic_ref<char>(first).load(std::memory_order_acquire) != 'g') {
      if (std::chrono::steady_clock::now() > limit) throw std::runtime_error("gate never opened");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
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
    knit::detail::lane_words& lane = *s.lane;
    // The answer_seq last, as the protocol writes it: a host that spins would otherwise
    // take a correct answer_seq written first as the answer (as it may: it cannot tell).
    lane.answer_status = in == "status" ? 99 : 1;
    lane.answer_bytes = in == "bytes" ? s.arena_bytes + 1 : 0;
    std::atomic_ref<std::uint64_t>(lane.answer_seq)
        .store(in == "seq" ? lane.request_seq + 7 : lane.request_seq, std::memory_order_release);
    const std::uint64_t one = 1;
    if (::write(s.answer_fd, &one, sizeof one) != sizeof one) std::abort();
    for (;;) ::pause();
  });
  // Item 4 of the threat model (docs/process-workers.md): pre-writes a well-formed answer
  // into the lane after its own, with the sequence the next call would have had were
  // sequences counted (its own request_seq + 1), status ok and 6 bytes "forged", then answers
  // its own call. The next call sent to this child must still get its own answer.
  knit::register_process_task("forge_next", [](std::string_view in) -> std::string {
    const knit::detail::child_slot s = knit::detail::current_child_slot();
    knit::detail::region_header& h = *s.header;
    const unsigned lanes = h.lanes;
    const auto k = static_cast<unsigned>(s.lane - &h.lane[0]);
    const unsigned n = (k + 1) % lanes;
    const std::size_t pair = 2 * knit::detail::round_to_page(s.arena_bytes);
    char* next_arena =
        s.answer_arena + (static_cast<std::ptrdiff_t>(n) - k) * static_cast<std::ptrdiff_t>(pair);
    std::memcpy(next_arena, "forged", 6);
    knit::detail::lane_words& next = h.lane[n];
    next.answer_status = 1;
    next.answer_bytes = 6;
    std::atomic_ref<std::uint64_t>(next.answer_seq)
        .store(std::atomic_ref<std::uint64_t>(s.lane->request_seq).load() + 1,
               std::memory_order_release);
    // Input: ms to stay busy after the forgery, so the next call is queued behind it.
    if (!in.empty())
      std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(std::string(in))));
    return "ok";
  });
  // Item 3: leaves a thread behind that rings its host's answer eventfd without end.
  knit::register_process_task("ring_spin", [](std::string_view) -> std::string {
    const int fd = knit::detail::current_child_slot().answer_fd;
    std::thread([fd] {
      const std::uint64_t one = 1;
      for (;;) (void)!::write(fd, &one, sizeof one);
    }).detach();
    return "ok";
  });
  // Leaves its child unable to begin another call: its answer eventfd at the counter's
  // limit and blocking, so the child's next ring (after this very answer) blocks for good.
  knit::register_process_task("jam_answer_bell", [](std::string_view) -> std::string {
    const int fd = knit::detail::current_child_slot().answer_fd;
    const std::uint64_t most = 0xfffffffffffffffe;
    if (::write(fd, &most, sizeof most) != sizeof most) return "write failed";
    if (::fcntl(fd, F_SETFL, 0) != 0) return "fcntl failed";
    return "jammed";
  });
  register_sandbox_tasks();
}

}  // namespace knit_test

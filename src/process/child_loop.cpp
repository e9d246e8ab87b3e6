// worker_main: the child's side of the protocol in shared_region.hpp. Parses the argv that
// spawn_child wrote, ties its life to the host (PDEATHSIG as a belt, the alive pipe as the
// guarantee), closes every fd it was not given, names itself knit-proc-N, does the
// handshake, then serves its lanes in turn, one call at a time, until the host goes away.
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "knit/process.hpp"
#include "process/child_slot.hpp"
#include "process/sandbox.hpp"
#include "process/shared_region.hpp"
#include "process/slot_bell.hpp"
#include "process/spawn.hpp"
#include "process/task_registry.hpp"

namespace knit::detail {
namespace {

// Exit codes of a child that could not start (the host reports them).
constexpr int exit_bad_args = 120;
constexpr int exit_bad_region = 121;
constexpr int exit_bad_sandbox = 122;
constexpr int exit_host_gone = 0;

child_slot slot;

template <class T>
bool parse(const char* s, T& out) {
  const char* end = s + std::strlen(s);
  auto [p, ec] = std::from_chars(s, end, out);
  return ec == std::errc() && p == end;
}

[[noreturn]] void die(int code, const char* why) {
  std::fprintf(stderr, "knit worker %d: %s\n", static_cast<int>(::getpid()), why);
  ::_exit(code);
}


// Whether the alive pipe is at EOF (or failing) now: every copy of its write end is closed.
bool host_gone(int alive_fd) {
  pollfd p{alive_fd, POLLIN, 0};
  return ::poll(&p, 1, 0) != 0;
}

// Closes every fd above stderr but `keep`: the child must not hold a listening socket, or
// another child's pipe end, that the host opened without CLOEXEC.
void close_other_fds(std::array<int, 4> keep) {
  std::sort(keep.begin(), keep.end());
  unsigned from = 3;
  for (int fd : keep) {
    if (static_cast<unsigned>(fd) > from) ::close_range(from, static_cast<unsigned>(fd) - 1, 0);
    from = static_cast<unsigned>(fd) + 1;
  }
  ::close_range(from, ~0U, 0);
}

// The child's claim on the call `seq` in `lane` (lane_words::claim): true when it may run it,
// false when the host took it back first.
bool claim_call(lane_words& lane, std::uint64_t seq) {
  std::uint64_t seen = load(lane.claim, std::memory_order_acquire);
  for (;;) {
    if (seen == seq) return false;  // the host's claim landed first
    if (std::atomic_ref<std::uint64_t>(lane.claim)
            .compare_exchange_weak(seen, ~seq, std::memory_order_acq_rel)) {
      return true;
    }
  }
}

// Serves request `seq` of lane `k` (its request_seq, already loaded with acquire).
void serve_one(const shared_region& region, unsigned k, const task_registry& registry,
               int answer_fd, std::uint64_t seq) {
  region_header& h = region.header();
  lane_words& lane = region.lane(k);
  char* const request_arena = region.request_arena(k);
  char* const answer_arena = region.answer_arena(k);
  slot.lane = &lane;
  slot.answer_arena = answer_arena;
  const std::uint32_t index = load(lane.task_index);
  const std::uint64_t bytes = load(lane.request_bytes);
  const std::size_t arena = region.arena_bytes();
  answer_status status = answer_status::ok;
  std::uint64_t answer_bytes = 0;
  if (!claim_call(lane, seq)) {
    status = answer_status::cancelled;  // taken back by the host while it waited: not run
  } else if (index >= registry.count() || bytes > arena) {
    status = answer_status::bad_request;
  } else {
    try {
      std::string out = registry.task(index)(std::string_view(request_arena, bytes));
      answer_bytes = out.size();
      if (out.size() > arena) {
        status = answer_status::too_large;
      } else {
        std::memcpy(answer_arena, out.data(), out.size());
      }
    } catch (const std::bad_alloc&) {
      // Under a memory limit a failed allocation is the limit's doing (RLIMIT_AS).
      if (load(h.memory_limit) == 0) {
        status = answer_status::task_threw;
        static constexpr std::string_view what = "std::bad_alloc";
        answer_bytes = std::min(what.size(), arena);
        std::memcpy(answer_arena, what.data(), answer_bytes);
      } else {
        status = answer_status::out_of_memory;
      }
    } catch (const std::exception& e) {
      status = answer_status::task_threw;
      answer_bytes = std::min(std::strlen(e.what()), arena);
      std::memcpy(answer_arena, e.what(), answer_bytes);
    } catch (...) {
      static constexpr std::string_view unknown = "an exception not derived from std::exception";
      status = answer_status::task_threw;
      answer_bytes = std::min(unknown.size(), arena);
      std::memcpy(answer_arena, unknown.data(), answer_bytes);
    }
  }
  // A sanitizer runtime (TSan) may defer the SIGSYS handler until after the refused call
  // returned: a refusal recorded during the task ends the child before any answer.
  if (load(h.sandbox_syscall, std::memory_order_acquire) != 0) ::_exit(exit_sandbox_violation);
  store(lane.answer_status, static_cast<std::uint32_t>(status));
  store(lane.answer_bytes, answer_bytes);
  store(lane.answer_seq, seq, std::memory_order_release);
  ring_if_sleeping(h.host_sleeping, answer_fd);
}

[[noreturn]] void serve(int argc, char** argv) {
  unsigned number = 0;
  pid_t host = 0;
  int memfd = -1, request_fd = -1, answer_fd = -1, alive_fd = -1;
  std::size_t arena = 0;
  if (argc != worker_argc || !parse(argv[2], number) || !parse(argv[3], host) ||
      !parse(argv[4], memfd) || !parse(argv[5], request_fd) || !parse(argv[6], answer_fd) ||
      !parse(argv[7], alive_fd) || !parse(argv[8], arena)) {
    die(exit_bad_args, "bad worker arguments");
  }
  // A belt: PDEATHSIG follows the thread that spawned us, not the process, and a host that
  // died before this line is caught by the checks below. The alive pipe is the guarantee.
  // In a PID namespace of its own (a strict child, namespaces.hpp) the child is pid 1 and
  // its parent has no pid there (getppid() is 0): the alive pipe alone tells.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const bool own_pid_namespace = ::getpid() == 1;
  if (!own_pid_namespace && ::getppid() != host) ::_exit(exit_host_gone);
  if (host_gone(alive_fd)) ::_exit(exit_host_gone);
  close_other_fds({memfd, request_fd, answer_fd, alive_fd});

  char name[16];
  std::snprintf(name, sizeof name, "knit-proc-%u", number);
  ::prctl(PR_SET_NAME, name);

  task_registry& registry = task_registry::instance();
  registry.freeze();
  shared_region region = map_region(memfd, arena);
  if (!region) die(exit_bad_region, "the shared region is not what the host said");
  ::close(memfd);  // the mapping stays
  slot = {&region.header(), &region.lane(0), region.answer_arena(0), arena, answer_fd};

  region_header& h = region.header();
  store(h.registry_count, registry.count());
  store(h.registry_hash, registry.hash());
  // Spin only where it can overlap the host (slot_bell.hpp); read once: the host wrote it
  // before the spawn. Asked before the sandbox (sched_getaffinity is allowed, but this is
  // the child's own setup, not a task's).
  const std::chrono::nanoseconds spin(may_spin() ? load(h.spin_ns) : 0);
  // The sandbox as the last step before ready: no call ever runs without it, and a child
  // that cannot install it fails its start (the host reports the exit code, stderr why).
  const std::string refused = apply_sandbox(h);
  if (!refused.empty()) die(exit_bad_sandbox, ("cannot install its sandbox: " + refused).c_str());
  store(h.ready, std::uint32_t{1}, std::memory_order_release);
  ring_if_sleeping(h.host_sleeping, answer_fd);

  // The lanes in turn (shared_region.hpp): call k is in lane k % lanes, and the next lane
  // is looked at the moment this one is answered, so a call the host queued behind this
  // one starts without waiting for the host.
  const unsigned lanes = region.lanes();
  std::array<std::uint64_t, region_max_lanes> last_seen{};  // request_seq last served, by lane
  for (unsigned k = 0;; k = (k + 1) % lanes) {
    lane_words& lane = region.lane(k);
    std::uint64_t seq = 0;
    const bell_end end = wait_for_ring(
        [&] {
          seq = load(lane.request_seq, std::memory_order_acquire);
          return seq != last_seen[k];
        },
        h.child_sleeping, request_fd, alive_fd, bell_clock::time_point::max(), spin);
    // The alive pipe at EOF (or failing): the host is gone.
    if (end != bell_end::moved) ::_exit(exit_host_gone);
    serve_one(region, k, registry, answer_fd, seq);
    last_seen[k] = seq;
  }
}

}  // namespace

child_slot current_child_slot() noexcept { return slot; }

}  // namespace knit::detail

namespace knit {

bool worker_main(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) != detail::worker_marker) return false;
  detail::serve(argc, argv);
}

}  // namespace knit

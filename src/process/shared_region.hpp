// The memory one worker thread shares with its child process, and the protocol over it.
//
// Protocol, version 2 (one host worker thread <-> one child; one call at a time):
//   Resources, all created by the host with CLOEXEC, the child's copies passed by posix_spawn
//   (dup2 onto the same numbers, which clears CLOEXEC on exactly those) and named in argv:
//     memfd    the region: a header page, then the request arena, then the answer arena,
//              each arena_bytes rounded up to a page. memfd_create: no name outlives a crash.
//     request  eventfd, host -> child: "look at request_seq" (rung only if child_sleeping).
//     answer   eventfd, child -> host: "look at ready / answer_seq" (only if host_sleeping).
//     alive    the read end of a pipe whose write end only the host holds (CLOEXEC, so no
//              other child inherits it): EOF means the host is gone and the child _exits.
//   Wakes (slot_bell.hpp): each side publishes its seq with a release store and rings the
//     other's eventfd only when the other's `sleeping` word says it sleeps (a Dekker pair of
//     seq_cst fences: no lost wake-up); a waiter first spins for spin_ns when it may run on
//     more than one CPU. A wake means "look again", never "there is news".
//   Start: the host fills magic, version, arena_bytes, spin_ns, the sandbox words and
//     spawns. The child maps the memfd, checks them, writes registry_count and
//     registry_hash, installs its sandbox when asked (sandbox.hpp; a child that cannot
//     exits), then ready = 1 (release), and rings `answer`. The host waits for ready or the child's
//     pidfd (start_timeout); a death, a timeout or a registry that differs fails the start.
//   Call: the host copies the request into the request arena, writes task_index,
//     request_bytes and then request_seq (seq + 1, release), and rings `request`. The child
//     sees request_seq move (acquire), checks task_index < its count and request_bytes <=
//     arena, runs the task on a view of the request arena, writes the answer (or the
//     exception's message, or the size it needed) into the answer arena, then answer_status
//     and answer_bytes, then answer_seq = request_seq (release), and rings `answer`.
//   The host waits for answer_seq to move from the last answer it took, or for the pidfd: the
//     pidfd first = the child died (waitid reads the signal or exit code and reaps it). It
//     reads each header word once (atomic_ref) and checks it: answer_seq == its seq (any
//     other new value is a broken protocol), status in range, answer_bytes <= arena.
//     Anything else means the child broke the protocol: it is killed, reaped and the call
//     fails, never the host.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "process/unique_fd.hpp"

namespace knit::detail {

inline constexpr std::uint32_t region_magic = 0x6b6e6974;  // "knit"
inline constexpr std::uint32_t region_version = 3;
inline constexpr std::size_t region_page = 4096;

enum class answer_status : std::uint32_t {
  ok = 1,             // answer_bytes of answer in the answer arena
  task_threw = 2,     // answer arena: the exception's what(), truncated to the arena
  too_large = 3,      // the answer did not fit: answer_bytes is the size it needed
  bad_request = 4,    // the child found task_index or request_bytes out of range
  out_of_memory = 5,  // the task's allocation failed under the memory limit (bad_alloc)
};
inline constexpr std::uint32_t answer_status_max = 5;

struct region_header {
  // Written by the host before the spawn.
  std::uint32_t magic;
  std::uint32_t version;
  std::uint64_t arena_bytes;
  // The handshake, written by the child.
  std::uint64_t registry_hash;
  std::uint32_t registry_count;
  std::uint32_t ready;
  // The request, written by the host.
  std::uint64_t request_seq;
  std::uint32_t task_index;
  std::uint32_t reserved0;
  std::uint64_t request_bytes;
  // The answer, written by the child.
  std::uint64_t answer_seq;
  std::uint32_t answer_status;
  std::uint32_t reserved1;
  std::uint64_t answer_bytes;
  // The wakes (slot_bell.hpp). host_sleeping: written by the host's worker thread (1 while
  // it waits in poll), read by the child before it rings `answer`. child_sleeping: written
  // by the child, read by the host before it rings `request`. spin_ns: written by the host
  // before the spawn, how long either side spins before it sleeps.
  std::uint32_t host_sleeping;
  std::uint32_t child_sleeping;
  std::uint64_t spin_ns;
  // The sandbox (version 3), written by the host before the spawn: sandbox 1 = strict,
  // memory_limit in bytes (0: none), open_files. sandbox_syscall: written by the child's
  // SIGSYS handler, the number of the system call its filter refused, just before it exits.
  std::uint32_t sandbox;
  std::uint32_t open_files;
  std::uint64_t memory_limit;
  std::uint64_t sandbox_syscall;
};
static_assert(sizeof(region_header) <= region_page);

// A word of the region, read or written once: the other side may change it at any time.
template <class T>
T load(T& word, std::memory_order order = std::memory_order_relaxed) noexcept {
  return std::atomic_ref<T>(word).load(order);
}
template <class T>
void store(T& word, T value, std::memory_order order = std::memory_order_relaxed) noexcept {
  std::atomic_ref<T>(word).store(value, order);
}

inline std::size_t round_to_page(std::size_t n) noexcept {
  return (n + region_page - 1) / region_page * region_page;
}
inline std::size_t region_bytes(std::size_t arena_bytes) noexcept {
  return region_page + 2 * round_to_page(arena_bytes);
}

// A mapping of a region, unmapped on destruction.
class shared_region {
 public:
  shared_region() = default;
  shared_region(void* base, std::size_t bytes, std::size_t arena_bytes) noexcept
      : base_(static_cast<char*>(base)), bytes_(bytes), arena_bytes_(arena_bytes) {}
  shared_region(shared_region&& other) noexcept;
  shared_region& operator=(shared_region&& other) noexcept;
  ~shared_region();

  region_header& header() const noexcept { return *reinterpret_cast<region_header*>(base_); }
  char* request_arena() const noexcept { return base_ + region_page; }
  char* answer_arena() const noexcept { return base_ + region_page + round_to_page(arena_bytes_); }
  std::size_t arena_bytes() const noexcept { return arena_bytes_; }
  explicit operator bool() const noexcept { return base_ != nullptr; }

 private:
  char* base_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t arena_bytes_ = 0;
};

// The host's side: a new memfd of region_bytes(arena_bytes), mapped, the header filled in.
// Throws std::system_error.
struct region_sandbox {
  std::uint32_t strict = 0;
  std::uint32_t open_files = 64;
  std::uint64_t memory_limit = 0;
};
shared_region create_region(std::size_t arena_bytes, std::uint64_t spin_ns,
                            const region_sandbox& sandbox, unique_fd& memfd);
// The child's side: maps `memfd` and checks its size and header. Returns an empty region
// when they are wrong.
shared_region map_region(int memfd, std::size_t arena_bytes) noexcept;

}  // namespace knit::detail

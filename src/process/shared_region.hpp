// The memory a host shares with one child process, and the protocol over it.
//
// Protocol, version 6 (one host <-> one child; up to `lanes` calls in the child at once):
//   Resources, all created by the host with CLOEXEC, the child's copies passed at its spawn
//   (spawn.hpp: onto numbers above stdio, named in argv; every other fd closed):
//     memfd    the region: a header page, then for each lane its request arena and its answer
//              arena, each arena_bytes rounded up to a page. memfd_create: no name outlives
//              a crash. Pages are the kernel's only once written (tmpfs), so a lane the host
//              never uses costs address space, not memory. Sealed once sized (F_SEAL_SHRINK,
//              GROW, SEAL): no child can shrink it under the host's mapping (a SIGBUS).
//     request  a pipe, host -> child: "look at the next lane's request_seq" (rung only if
//              child_sleeping). The write end is the host's alone, non-blocking, and the host
//              keeps a read end too (never read): a ring never blocks, never meets EPIPE.
//     answer   eventfd, child -> host: "look at ready / answer_seq". The host never reads or
//              writes it: it only counts its edges (process_ring.hpp, the wake budget).
//     alive    the read end of a pipe whose write end only the host holds (CLOEXEC, so no
//              other child inherits it): EOF means the host is gone and the child _exits.
//     output   the child's fds 1 and 2: a pipe of its own, forwarded by the host
//              (child_output.hpp); fd 0 is /dev/null. Never the host's stdio.
//   Wakes (slot_bell.hpp): each side publishes its seq with a release store and rings the
//     other only when the other's `sleeping` word says it sleeps (a Dekker pair of seq_cst
//     fences: no lost wake-up); a waiter first spins for spin_ns when it may run on more
//     than one CPU. A wake means "look again", never "there is news".
//   Start: the host fills magic, version, arena_bytes, lanes, spin_ns, the sandbox words and
//     spawns. The child maps the memfd, checks them, writes registry_count and
//     registry_hash, installs its sandbox when asked (sandbox.hpp; a child that cannot
//     exits), then ready = 1 (release), and rings `answer`. The host waits for ready or the
//     child's pidfd (start_timeout); a death, a timeout or a registry that differs fails the
//     start.
//   Lanes, in turn: a child's k-th call (k = 0, 1, ...) is in lane k % lanes, for host and
//     child alike; each side counts from 0 for each new child. The host puts a call into a
//     lane only once it has taken that lane's previous answer (so at most `lanes` calls are
//     in the child), and the child serves the lanes in turn, so it starts call k + 1 the
//     moment it has answered call k, without waiting for the host.
//   Call (lane i): the host copies the request into lane i's request arena, writes its
//     task_index, request_bytes, claim = 0 (unclaimed) and then request_seq = the call's
//     nonce (call_nonce.hpp, release), and rings `request`. The child sees lane i's
//     request_seq move from the value it last served there (acquire), claims the call
//     (claim: CAS to ~seq; finding seq there means the host took it back: answered
//     `cancelled`, not run), checks task_index < its count
//     and request_bytes <= arena, runs the task on a view of the request arena, writes the
//     answer (or the exception's message, or the size it needed) into lane i's answer arena,
//     then answer_status and answer_bytes, then answer_seq = request_seq (release), and rings
//     `answer`.
//   The host reads each lane word once (atomic_ref). An answer_seq other than the call's
//     nonce is no answer yet (stale, or written ahead by a task that guessed): never taken.
//     The call's own answer is checked: status in range, answer_bytes <= arena; anything
//     else is a broken protocol: the child is killed, reaped and the call fails, never the
//     host.
//   After a child's death its mapping is final: every answer in it was written before the
//     death, and its claims say which calls it began. A call it had not begun can go to
//     another child (process_ring.hpp: at most once).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "process/unique_fd.hpp"

namespace knit::detail {

inline constexpr std::uint32_t region_magic = 0x6b6e6974;  // "knit"
inline constexpr std::uint32_t region_version = 6;
// Lanes a mapping may have (process_options::lanes): the calls one host may have in one
// child at once.
inline constexpr unsigned region_max_lanes = 32;
inline constexpr std::size_t region_page = 4096;

enum class answer_status : std::uint32_t {
  ok = 1,             // answer_bytes of answer in the answer arena
  task_threw = 2,     // answer arena: the exception's what(), truncated to the arena
  too_large = 3,      // the answer did not fit: answer_bytes is the size it needed
  bad_request = 4,    // the child found task_index or request_bytes out of range
  out_of_memory = 5,  // the task's allocation failed under the memory limit (bad_alloc)
  cancelled = 6,      // not run: the host took it back first (claim); version 4
};
inline constexpr std::uint32_t answer_status_max = 6;

// One lane of a child's mapping: the words of one call (lanes, version 4). Lane i's arenas
// are the i-th pair after the header page. Its own cache line: the host writes lane i + 1's
// request while the child writes lane i's answer.
struct alignas(64) lane_words {
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
  // Who decided the call now in this lane (version 6). The host writes 0 (unclaimed) before
  // the call's request_seq; the child CASes it to ~request_seq as it starts the call, the
  // host CASes it from 0 to request_seq to take the call back (a cancel, or a move to
  // another child). Whichever lands first decides: a call taken back is answered
  // `cancelled` without being run. The host takes back only from 0: any other word (~seq,
  // or one a task scribbled) means the child may have started the call, which then stays.
  std::uint64_t claim;
};

struct region_header {
  // Written by the host before the spawn.
  std::uint32_t magic;
  std::uint32_t version;
  std::uint64_t arena_bytes;
  // The handshake, written by the child.
  std::uint64_t registry_hash;
  std::uint32_t registry_count;
  std::uint32_t ready;
  // The wakes (slot_bell.hpp). host_sleeping: written by the host (1 while it waits in
  // poll; the host ring holds it at 1), read by the child before it rings `answer`.
  // child_sleeping: written by the child, read by the host before it rings `request`.
  // spin_ns: written by the host before the spawn, how long either side spins before it
  // sleeps.
  std::uint32_t host_sleeping;
  std::uint32_t child_sleeping;
  std::uint64_t spin_ns;
  // The sandbox (version 3), written by the host before the spawn: sandbox 1 = strict,
  // memory_limit in bytes (0: none), open_files. sandbox_syscall: written by the child's
  // SIGSYS handler just before it exits, the system call its filter refused: high 32 bits
  // the ABI (sandbox_abi: 0 native, 1 i386, 2 x32; 0xffffffff another), low 32 its number
  // + 1 (0: none written). Only a name: the host judges the death by waitid (judge_death).
  std::uint32_t sandbox;
  std::uint32_t open_files;
  std::uint64_t memory_limit;
  std::uint64_t sandbox_syscall;
  // Written by the host before the spawn: how many lanes the mapping has (version 4).
  std::uint32_t lanes;
  std::uint32_t reserved2;
  lane_words lane[region_max_lanes];
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
inline std::size_t region_bytes(std::size_t arena_bytes, unsigned lanes) noexcept {
  return region_page + std::size_t{lanes} * 2 * round_to_page(arena_bytes);
}

// A mapping of a region, unmapped on destruction.
class shared_region {
 public:
  shared_region() = default;
  shared_region(void* base, std::size_t bytes, std::size_t arena_bytes, unsigned lanes) noexcept
      : base_(static_cast<char*>(base)), bytes_(bytes), arena_bytes_(arena_bytes), lanes_(lanes) {}
  shared_region(shared_region&& other) noexcept;
  shared_region& operator=(shared_region&& other) noexcept;
  ~shared_region();

  region_header& header() const noexcept { return *reinterpret_cast<region_header*>(base_); }
  lane_words& lane(unsigned i) const noexcept { return header().lane[i]; }
  char* request_arena(unsigned lane) const noexcept {
    return base_ + region_page + std::size_t{lane} * 2 * round_to_page(arena_bytes_);
  }
  char* answer_arena(unsigned lane) const noexcept {
    return request_arena(lane) + round_to_page(arena_bytes_);
  }
  std::size_t arena_bytes() const noexcept { return arena_bytes_; }
  unsigned lanes() const noexcept { return lanes_; }
  explicit operator bool() const noexcept { return base_ != nullptr; }

 private:
  char* base_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t arena_bytes_ = 0;
  unsigned lanes_ = 0;
};

// The host's side: a new memfd of region_bytes(arena_bytes, lanes), mapped, the header filled
// in. Throws std::system_error.
struct region_sandbox {
  std::uint32_t strict = 0;
  std::uint32_t open_files = 64;
  std::uint64_t memory_limit = 0;
};
shared_region create_region(std::size_t arena_bytes, unsigned lanes, std::uint64_t spin_ns,
                            const region_sandbox& sandbox, unique_fd& memfd);
// The child's side: maps `memfd` and checks its size and header (the lanes are the
// header's, 1 .. region_max_lanes, and the size must be theirs). Returns an empty region
// when they are wrong.
shared_region map_region(int memfd, std::size_t arena_bytes) noexcept;

}  // namespace knit::detail

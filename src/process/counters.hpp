// The process workers' counters, shared by every host ring and the starter of the process; read as
// a snapshot by knit::current_process_stats().
#pragma once

#include <atomic>
#include <cstdint>

namespace knit::detail {

struct process_counters {
  std::atomic<std::uint64_t> children_started{0};
  std::atomic<std::uint64_t> children_live{0};
  std::atomic<std::uint64_t> crashes{0};
  std::atomic<std::uint64_t> degraded_workers{0};
  std::atomic<std::uint64_t> calls{0};
  std::atomic<std::uint64_t> killed{0};
  std::atomic<std::uint64_t> respawned{0};
  std::atomic<std::uint64_t> sandbox_kills{0};
  std::atomic<std::uint64_t> memory_limit_kills{0};
  std::atomic<std::uint64_t> calls_withdrawn{0};
  std::atomic<std::uint64_t> calls_resent{0};
  std::atomic<std::uint64_t> calls_moved{0};
  std::atomic<std::uint64_t> protocol_kills{0};
  // Children that crashed or were killed and are not replaced yet. Writers: a ring or box that
  // loses its child (+1) and any start of one (-1, counting a respawn); the
  // replacement may start on another worker thread (a stuck call's thread is retired).
  std::atomic<std::uint64_t> to_replace{0};
};

process_counters& counters() noexcept;

}  // namespace knit::detail

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
  // What a respawn replaced is each worker_box's own count (starter.hpp, lost_): a global
  // one let a child lost by a pool that ended before its replacement started make the next
  // start anywhere (another pool's first child) count as a respawn.
};

process_counters& counters() noexcept;

}  // namespace knit::detail

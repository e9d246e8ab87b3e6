// The process workers' counters, shared by every channel of the process; read as a snapshot
// by knit::current_process_stats().
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
};

process_counters& counters() noexcept;

}  // namespace knit::detail

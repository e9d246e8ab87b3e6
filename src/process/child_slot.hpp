// The running child's own slot, for tests that play a task gone wild (one that scribbles
// over its shared region or signals an answer it never wrote): in a child served by
// worker_main, the region and the answer eventfd; null / -1 in a host.
#pragma once

#include "process/shared_region.hpp"

namespace knit::detail {

struct child_slot {
  region_header* header = nullptr;
  char* answer_arena = nullptr;
  std::size_t arena_bytes = 0;
  int answer_fd = -1;
};

child_slot current_child_slot() noexcept;

}  // namespace knit::detail

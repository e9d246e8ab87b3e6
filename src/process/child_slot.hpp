// The running child's own slot, for tests that play a task gone wild (one that scribbles
// over its shared region or signals an answer it never wrote): in a child served by
// worker_main, the region, the lane of the running call and the answer eventfd; null / -1
// in a host.
#pragma once

#include "process/shared_region.hpp"

namespace knit::detail {

struct child_slot {
  region_header* header = nullptr;
  lane_words* lane = nullptr;    // the lane of the call being served
  char* answer_arena = nullptr;  // that lane's
  std::size_t arena_bytes = 0;
  int answer_fd = -1;
};

child_slot current_child_slot() noexcept;

}  // namespace knit::detail

// The process tasks of tests/hostile: each attacks its host from inside a strict-sandboxed
// child, as a task compromised by its input would. Built against the installed package only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

namespace hostile {

// Registers every task (echo, the attacks, the slow and crashing helpers). Called first in
// main, in the host and in every child alike (the same binary, the same order).
void register_tasks();

// The shared region as a child sees it in its own /proc/self/maps (the mapping of the memfd
// named "knit-proc"): [first, second) or {0, 0} when there is none.
std::pair<std::uintptr_t, std::uintptr_t> find_region();

}  // namespace hostile

// thread_token: what a pool knows its hosts by. A std::thread::id is not enough: glibc hands
// an exited thread's id (its pthread_t, the address of its descriptor) to later threads, so
// a pool that outlives the thread that built it would take a newcomer for its builder
// (accepting its submit, refusing to attach it). A token is a number drawn once per thread
// from a process-wide counter that only grows: no two threads ever hold the same one, and a
// fresh thread starts with none (thread_local storage begins zeroed).
#pragma once

#include <cstdint>

namespace knit::detail {

// The calling thread's token, never 0; drawn on the thread's first call.
std::uint64_t this_thread_token() noexcept;

}  // namespace knit::detail

// The one interface every runtime in the peer benchmarks (peer_benchmarks.cpp) implements,
// so the same benchmark bodies run over knit and over what a C++ user would write instead.
//
// A runtime owns its worker thread(s), pinned to one CPU, and a host side driven by the
// calling (host) thread:
//   submit(task, arg, reply)  host thread: run task(arg) on a worker; reply(value) later
//                             runs on the host thread, from poll() or wait_for().
//   poll()                    host thread, never blocks: runs the replies that are ready,
//                             returns how many ran (a busy-polling host loops on it).
//   wait_for(timeout)         host thread: blocks until a reply is ready or timeout passes,
//                             then runs the ready replies; returns how many ran (an event
//                             loop's blocking wait).
// The task is a plain function pointer so that no runtime pays for type erasure the others
// do not; each runtime carries the reply as the user of that runtime would.
#pragma once

#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>

namespace knit_bench {

using task_fn = std::uint64_t (*)(std::uint64_t);

template <class R>
concept peer_runtime = requires(R r, task_fn task, std::uint64_t arg,
                                std::chrono::nanoseconds timeout) {
  { R::name } -> std::convertible_to<const char*>;
  r.submit(task, arg, [](std::uint64_t) {});
  { r.poll() } -> std::same_as<std::size_t>;
  { r.wait_for(timeout) } -> std::same_as<std::size_t>;
};

}  // namespace knit_bench

// The forwarder: what process workers write to their stdout and stderr, copied to the host's
// log sink (knit/log.hpp: stderr unless the program set one), bounded, by one process-wide
// thread (created with the first child, never ended: like the starter, it must outlive every
// static destructor).
//
// Each child's fds 1 and 2 are the write end of a pipe of its own (spawn.hpp); the forwarder
// holds the read end (O_NONBLOCK, CLOEXEC) in an epoll set, armed once (EPOLLONESHOT) and
// re-armed after each read, so each child is read at its own pace and none is read twice at
// once.
//   Lines: each complete line goes to the sink as one line, prefixed
//     "knit-proc-<number> (pid <pid>): "; a line over line_max bytes is cut there ("[cut]")
//     and the rest up to its newline dropped; a last line without a newline goes at EOF.
//   Bounds, per child, per second from its first read in that second: at most
//     bytes_per_second read and at most reads_per_second wakes. Past either the forwarder
//     stops watching the child's pipe (not re-armed) until that second ends. So a child that
//     writes without end fills its own pipe and blocks in its own write, and wakes the host a
//     few times a second; one that dribbles a byte at a time wakes it at most
//     reads_per_second times. Past the byte bound it says once
//     "knit-proc-<number>: output held back (over 64 KiB/s)".
//   The host's stderr (the default sink, log.cpp): a line is written only when poll says it
//     can take it (within 100 ms, or at once after a line had to be dropped); a host whose
//     stderr nobody reads loses the children's lines but never stalls the forwarder, so the
//     children never stall on it. A sink the program set is called on the forwarder's
//     thread: while it blocks, the children's pipes fill and they wait in their writes.
//   EOF (every copy of the write end closed: the child ended): the read end is closed and
//     forgotten. The forwarder holds no fd of the child but that read end, so it keeps no
//     child alive; it holds one fd of its own, its epoll set.
// Nothing per call: the host need not read anything for its children to go on.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "process/unique_fd.hpp"

namespace knit::detail {

inline constexpr std::size_t child_output_bytes_per_second = 64 * 1024;
inline constexpr unsigned child_output_reads_per_second = 64;
inline constexpr std::size_t child_output_line_max = 1024;

// Hands the read end of child `number`'s output pipe (O_NONBLOCK) to the forwarder, which
// starts its thread on the first call. False (the read end closed) when it cannot watch it:
// the caller then ends the child, which could not write.
bool forward_child_output(unique_fd read_end, unsigned number, pid_t pid) noexcept;

}  // namespace knit::detail

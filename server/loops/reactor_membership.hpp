// reactor_membership: takes a connected socket out of its io_context's epoll set while the
// loop's io_uring waits for it, and puts it back before an Asio operation needs it.
//
// Why: Asio registers a socket in its reactor's epoll set when the socket opens (edge-
// triggered, for reading), for its whole life. While the ring reads and writes a keep-alive
// connection, every segment that arrives would still wake the reactor's descriptor, and the
// loop would pay an epoll_wait(…, 0) for an event no Asio operation waits for.
//
// Spec.
//   Fact (Asio 1.81, detail/impl/epoll_reactor.ipp): a socket's descriptor_state keeps the
//     events it registered (registered_events_) and one queue per kind of operation; an
//     operation that must wait is queued there and completed when epoll reports the socket
//     (epoll_event.data.ptr is the descriptor_state); a write that must wait adds EPOLLOUT
//     with EPOLL_CTL_MOD, which fails (ENOENT) for a socket not in the set. Closing the
//     socket removes it from the set without an epoll_ctl (the kernel drops a closed file).
//   leave_reactor(s): EPOLL_CTL_DEL of s from the set, only when no Asio operation is queued
//     on it (one waiting would never complete); false, and s stays, otherwise or where
//     !kReactorWakeActive.
//   rejoin_reactor(s): EPOLL_CTL_ADD with the same events and data Asio registered; a socket
//     already readable is reported at once (ADD checks). Call it before any Asio operation on
//     a socket that left. An error (ENOMEM, ENOSPC: the set is full) is returned: the caller
//     must not start the operation.
// Threads: on the loop's thread (the one that runs s's io_context), like Asio's own calls.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

namespace knit_server {

using reactor_socket =
    boost::asio::basic_stream_socket<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;

bool leave_reactor(reactor_socket& s) noexcept;
boost::system::error_code rejoin_reactor(reactor_socket& s) noexcept;

}  // namespace knit_server

// drained_read: a socket read that remembers when it emptied the socket, so the next read
// waits for epoll instead of trying a recvfrom that can only fail with EAGAIN.
//
// Spec.
//   Fact 1 (Linux TCP, TCP_INQ since 4.18): with the socket option TCP_INQ on, every
//     recvmsg returns a control message TCP_CM_INQ with the bytes left in the receive queue
//     when it returned (computed after the socket lock is released, the backlog included),
//     and a non-zero value when the peer's FIN is pending, so that a read of the data
//     before a FIN is never taken for "empty". Accepted sockets inherit the option from the
//     listening socket (checked on 6.1 and 6.18): no system call per connection.
//   Fact 2 (edge-triggered epoll, which Asio's reactor uses: EPOLLIN | EPOLLET): every
//     segment (or FIN) queued after that moment wakes the socket's waiters, and with it makes
//     the descriptor ready again: the next epoll_wait reports EPOLLIN.
//   So after a read that leaves TCP_CM_INQ = 0, a read tried before the next EPOLLIN finds
//   nothing (EAGAIN). nginx skips that read too (rev->ready = 0 after a short read, unless
//   EPOLLRDHUP said a FIN is pending).
//
//   Asio 1.81's epoll reactor (detail/impl/epoll_reactor.ipp) keeps, per descriptor,
//   try_speculative_[read]: when true, a new read is tried at once (a recvfrom in the call
//   that starts it); when false, the operation waits for the next EPOLLIN, which sets it true
//   again. It turns false only when a read operation reports done_and_exhausted, which
//   Asio's receive does only for a read of 0 bytes (end of stream). drained_buffer is a
//   one-buffer sequence type of our own; the receive operation Asio builds for it
//   (reactive_socket_recv_op_base<drained_buffer>) has its perform step specialized here: the
//   same receive as Asio's, as a recvmsg that asks for TCP_CM_INQ, reporting
//   done_and_exhausted when the queue is left empty (fact 1). The same errors, the same
//   completion; the reactor does the rest under its descriptor lock, as for end of stream.
//   Without the control message (the option is off, an old kernel) the read reports what
//   Asio's does: every read is tried at once, as before.
//
//   No lost wake: data or a FIN that arrives after the read raises EPOLLIN (fact 2) whether
//   or not a read is waiting; the reactor's perform_io sets try_speculative_ true on that
//   event, so a read started later tries at once, and one already waiting is performed.
//
// Used for the session's reads of a request head (session_read.cpp), the read after every
// response; the listener turns TCP_INQ on (enable_queue_hint). Body reads (Beast's
// http::async_read) keep Asio's own buffers: a body usually comes with its head.
// tests/server/drained_read_test.cpp forces each case (a read that empties the queue makes
// the next read wait with the new bytes still in the kernel; one that leaves bytes or a FIN
// lets it try at once) and runs a ping-pong that would hang on a lost wake.
//
// Only for the Asio this was read against (Boost 1.81, epoll reactor): anywhere else
// drained_buffer is an ordinary buffer and every read is tried at once, as before
// (knit_server::kDrainedReadActive says which).
#pragma once

#include <cstddef>

#include <boost/asio/buffer.hpp>
#include <boost/version.hpp>

#if BOOST_VERSION == 108100 && defined(__linux__) && !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#define KNIT_DRAINED_READ 1
// socket_base first: the operation's header names it without including it.
#include <boost/asio/socket_base.hpp>

#include <boost/asio/detail/reactive_socket_recv_op.hpp>
#else
#define KNIT_DRAINED_READ 0
#endif

namespace knit_server {

// Whether a read that empties the socket makes the next read wait for epoll (this Asio) or
// not (any other).
inline constexpr bool kDrainedReadActive = KNIT_DRAINED_READ == 1;

// Turns TCP_INQ on for `fd` (a listening socket: its accepted sockets inherit it). False
// when the kernel refuses it (before 4.18): reads then behave as Asio's.
bool enable_queue_hint(int fd) noexcept;

// One mutable buffer, of a type of its own so that Asio builds a receive operation for it
// that this file specializes. A MutableBufferSequence: it converts to mutable_buffer.
class drained_buffer : public boost::asio::mutable_buffer {
 public:
  explicit drained_buffer(boost::asio::mutable_buffer buffer) noexcept
      : boost::asio::mutable_buffer(buffer) {}
};

}  // namespace knit_server

#if KNIT_DRAINED_READ
namespace boost::asio::detail {

// Asio's receive, reporting done_and_exhausted when it empties the queue (drained_read.cpp).
template <>
reactor_op::status reactive_socket_recv_op_base<knit_server::drained_buffer>::do_perform(
    reactor_op* base);

}  // namespace boost::asio::detail
#endif

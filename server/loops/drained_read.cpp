// The receive step of a read into a drained_buffer (the spec is in drained_read.hpp).
#include "loops/drained_read.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace knit_server {

bool enable_queue_hint(int fd) noexcept {
  const int on = 1;
  return ::setsockopt(fd, IPPROTO_TCP, TCP_INQ, &on, sizeof on) == 0;
}

}  // namespace knit_server

#if KNIT_DRAINED_READ
namespace boost::asio::detail {

template <>
reactor_op::status reactive_socket_recv_op_base<knit_server::drained_buffer>::do_perform(
    reactor_op* base) {
  auto* op = static_cast<reactive_socket_recv_op_base*>(base);
  const bool stream = (op->state_ & socket_ops::stream_oriented) != 0;

  // Asio's receive of one buffer (socket_ops::non_blocking_recv1) as a recvmsg, with room
  // for the TCP_CM_INQ control message.
  iovec iov{op->buffers_.data(), op->buffers_.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t got = 0;
  do {
    got = ::recvmsg(op->socket_, &msg, op->flags_);
  } while (got < 0 && errno == EINTR);
  if (got < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return not_done;  // waits for EPOLLIN
    op->ec_ = boost::system::error_code(errno, boost::asio::error::get_system_category());
    op->bytes_transferred_ = 0;
    return done;
  }
  op->ec_ = boost::system::error_code();
  op->bytes_transferred_ = static_cast<std::size_t>(got);
  if (stream && got == 0) {
    // End of stream, reported and marked exhausted as Asio does.
    op->ec_ = boost::asio::error::eof;
    return done_and_exhausted;
  }

  // The queue left empty (no bytes, no FIN pending): the next read waits for EPOLLIN.
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_TCP && c->cmsg_type == TCP_CM_INQ) {
      int left = 0;
      std::memcpy(&left, CMSG_DATA(c), sizeof left);
      if (stream && left == 0) return done_and_exhausted;
    }
  }
  return done;
}

}  // namespace boost::asio::detail
#endif

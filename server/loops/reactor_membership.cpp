// What reactor_membership needs of Asio 1.81's socket and epoll reactor (the spec is in
// reactor_membership.hpp).
#include "loops/reactor_membership.hpp"

#include <sys/epoll.h>

#include <cerrno>

#include "loops/reactor_wake.hpp"  // KNIT_REACTOR_WAKE

#if KNIT_REACTOR_WAKE
#include <boost/asio/detail/epoll_reactor.hpp>

#include "loops/asio_private.hpp"
#endif

namespace knit_server {

#if KNIT_REACTOR_WAKE
namespace detail = boost::asio::detail;
using descriptor_state = detail::epoll_reactor::descriptor_state;

// The members reached (asio_private.hpp).
namespace asio_private {
struct socket_impl {
  friend auto member_of(socket_impl);
};
struct state_events {
  friend auto member_of(state_events);
};
struct state_queues {
  friend auto member_of(state_queues);
};
template struct member<socket_impl,
                       &boost::asio::basic_socket<boost::asio::ip::tcp,
                                                  boost::asio::io_context::executor_type>::impl_>;
template struct member<state_events, &descriptor_state::registered_events_>;
template struct member<state_queues, &descriptor_state::op_queue_>;
}  // namespace asio_private

namespace {

using namespace asio_private;

// The reactor's epoll set, as reactor_wake finds it (the socket's io_context has its reactor).
int epoll_fd_of(reactor_socket& s) noexcept { return reactor_fd(s.get_executor().context()); }

descriptor_state* state_of(reactor_socket& s) noexcept {
  return (s.*member_of(socket_impl{})).get_implementation().reactor_data_;
}

}  // namespace

bool leave_reactor(reactor_socket& s) noexcept {
  descriptor_state* state = state_of(s);
  if (state == nullptr || !s.is_open()) return false;
  for (const auto& queue : state->*member_of(state_queues{})) {
    if (!queue.empty()) return false;
  }
  return ::epoll_ctl(epoll_fd_of(s), EPOLL_CTL_DEL, s.native_handle(), nullptr) == 0;
}

boost::system::error_code rejoin_reactor(reactor_socket& s) noexcept {
  descriptor_state* state = state_of(s);
  if (state == nullptr || !s.is_open()) return {};
  epoll_event ev{};
  ev.events = state->*member_of(state_events{});
  ev.data.ptr = state;
  if (::epoll_ctl(epoll_fd_of(s), EPOLL_CTL_ADD, s.native_handle(), &ev) == 0 || errno == EEXIST) {
    return {};
  }
  return {errno, boost::system::system_category()};
}
#else
bool leave_reactor(reactor_socket&) noexcept { return false; }
boost::system::error_code rejoin_reactor(reactor_socket&) noexcept { return {}; }
#endif

}  // namespace knit_server

// asio_private: names a private member of one of Asio's classes, for the few places that
// must reach into Asio 1.81's scheduler and epoll reactor (reactor_wake.cpp,
// reactor_membership.cpp; each says which fact of Asio's code it relies on, and each is
// compiled only for that Asio: KNIT_REACTOR_WAKE).
//
// How: access checks do not apply to the template arguments of an explicit instantiation
// ([temp.spec.general]), and the friend function that instantiation defines hands the member
// pointer out. One tag per member, in this namespace (where the friend is declared and
// defined), declared with `friend auto member_of(tag);` (its type deduced from the
// instantiation, so even a member of a private type can be named); tag names differ between
// files:
//
//   namespace knit_server::asio_private {
//   struct queue_tag { friend auto member_of(queue_tag); };
//   template struct member<queue_tag, &detail::scheduler::op_queue_>;
//   }
//   ... object.*member_of(asio_private::queue_tag{}) ...
#pragma once

namespace knit_server::asio_private {

template <class Tag, auto Member>
struct member {
  friend auto member_of(Tag) { return Member; }
};

}  // namespace knit_server::asio_private

// knit/async_run.hpp: a pool call as an Asio asynchronous operation, usable with any
// completion token (callbacks, use_future, use_awaitable, deferred, as_tuple, ...).
#pragma once

#include <exception>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_category.hpp>
#include <boost/system/error_code.hpp>

#include "knit/asio_host.hpp"
#include "knit/error.hpp"

namespace knit {

namespace detail {

/// knit::errc as a Boost.System category. Asio's completion tokens know only
/// boost::system::error_code; one built from a std::error_code of a category Boost does not
/// know prints as "std:unknown" with a value hashed from the category's address (a
/// different number in each run). So async_run's codes are of this category: the name
/// "knit", the errc number as the value, knit::error_category()'s messages. A fixed 64-bit
/// id makes the copies of it in libraries and the program compare equal.
class boost_category final : public boost::system::error_category {
 public:
  constexpr boost_category() noexcept : boost::system::error_category(0x8c1f5e2a6b7d4e39ULL) {}
  const char* name() const noexcept override { return "knit"; }
  std::string message(int value) const override { return knit::error_category().message(value); }
};

}  // namespace detail

/// @brief The Boost.System category of knit::async_run's error codes: name() "knit",
/// value() the knit::errc number, message() knit::error_category()'s.
inline const boost::system::error_category& boost_error_category() noexcept {
  static const detail::boost_category instance;  // constant-initialised: no guard, no order
  return instance;
}

/// @brief Whether `ec` is knit's error `e`: a code of knit::boost_error_category() with e's
/// number (what async_run delivers), or a boost::system::error_code built from `e` itself
/// (which wraps the std::error_code). Compare async_run's codes with knit::errc values so;
/// `!=` and the reversed forms follow (C++20).
inline bool operator==(const boost::system::error_code& ec, errc e) noexcept {
  if (ec.category() == boost_error_category()) return ec.value() == static_cast<int>(e);
  return static_cast<std::error_code>(ec) == make_error_code(e);
}

/// `std::error_code == knit::errc`, as the standard's operator compares it. Declared so the
/// overload above (a std::error_code converts to a boost one) does not make that comparison
/// ambiguous: this one needs no conversion at all.
inline bool operator==(const std::error_code& ec, errc e) noexcept {
  return ec == make_error_code(e);
}

namespace detail {

/// The boost::system::error_code async_run hands its handler for `ec`: knit's own errors in
/// boost_error_category(); anything else wrapped as Boost does.
inline boost::system::error_code to_boost_error(const std::error_code& ec) noexcept {
  if (ec.category() == knit::error_category()) return {ec.value(), boost_error_category()};
  return boost::system::error_code(ec);
}

/// The value type of a call to `fn(std::move(arg))`: its result, or knit::unit for void.
template <class Fn, class Arg>
using run_value_t =
    std::conditional_t<std::is_void_v<std::invoke_result_t<std::decay_t<Fn>&, std::decay_t<Arg>&&>>,
                       unit, std::invoke_result_t<std::decay_t<Fn>&, std::decay_t<Arg>&&>>;

/// What async_run and async_run_result hand their completion handler.
enum class run_delivery {
  error_and_value,  ///< void(boost::system::error_code, R)
  result,           ///< void(knit::result<R>)
};

/// Installed in the handler's cancellation slot while the call is in the pool: any
/// cancellation type (terminal, partial, total) asks the pool to abandon the call. That
/// succeeds only before a worker has started it, when the call has had no effect at all,
/// which satisfies even `total`; a running call cannot be stopped, so the request is then
/// ignored and the call completes as usual (Asio allows an operation to ignore a request).
///
/// A slot emits on whatever thread runs the handler's executor, but pool::cancel is for the
/// host thread only: from any other thread the request is posted to the host's io_context.
struct run_canceller {
  asio_host* host;
  call_id id = 0;  // 0 until submit() names the call; pool::cancel(0) is a no-op

  void operator()(boost::asio::cancellation_type_t type) const {
    if ((type &
         (boost::asio::cancellation_type::terminal | boost::asio::cancellation_type::partial |
          boost::asio::cancellation_type::total)) == boost::asio::cancellation_type::none) {
      return;
    }
    pool* target = &host->get_pool();
    if (host->context().get_executor().running_in_this_thread()) {
      target->cancel(id);  // the completion it may deliver is posted, not run here
    } else {
      boost::asio::post(host->context(), [target, id = id] { target->cancel(id); });
    }
  }
};

/// The completion the pool holds inside its call record for one async_run: the user's
/// handler, a work guard on the handler's executor, and the handler's cancellation slot.
/// No other per-call state, so async_run allocates nothing beyond the call record (the
/// hand-off to the handler's executor uses the handler's associated allocator).
template <class Handler, class Value, run_delivery Delivery>
class run_operation {
  using executor_type =
      boost::asio::associated_executor_t<Handler, boost::asio::io_context::executor_type>;

 public:
  run_operation(Handler handler, const boost::asio::io_context::executor_type& host_executor)
      : handler_(std::move(handler)),
        host_executor_(host_executor),
        work_(boost::asio::make_work_guard(
            boost::asio::get_associated_executor(handler_, host_executor))),
        slot_(boost::asio::get_associated_cancellation_slot(handler_)) {}

  /// The handler's cancellation slot (not connected when the handler has none).
  boost::asio::cancellation_slot& slot() noexcept { return slot_; }

  /// Called once by the pool, on the host thread (inside drain(), or inside cancel() when a
  /// cancellation request won), or by the initiation when submit() rejected the call.
  /// Completes the way Asio's own I/O objects do: post to the host's io_context (the I/O
  /// executor), then dispatch to the handler's associated executor. So the handler never
  /// runs inside async_run, inside a slot's emit(), or inside pool::drain() (where
  /// pool::shutdown() is not allowed), and a handler on the host's io_context (or on an
  /// executor that runs work inline, like use_future's) costs one post.
  void operator()(result<Value> r) {
    auto allocator = boost::asio::get_associated_allocator(handler_);
    auto on_host = [handler = std::move(handler_), work = std::move(work_), slot = slot_,
                    r = std::move(r)]() mutable {
      auto executor = work.get_executor();
      auto allocator = boost::asio::get_associated_allocator(handler);
      auto finish = [handler = std::move(handler), slot, r = std::move(r)]() mutable {
        if (slot.is_connected()) slot.clear();  // the operation is over: the slot may be reused
        if constexpr (Delivery == run_delivery::result) {
          std::move(handler)(std::move(r));
        } else if (r.ok()) {
          std::move(handler)(boost::system::error_code(), std::move(r).value());
        } else {
          std::move(handler)(to_boost_error(r.error()), Value{});
        }
      };
      boost::asio::dispatch(executor, boost::asio::bind_allocator(allocator, std::move(finish)));
      work.reset();
    };
    boost::asio::post(host_executor_, boost::asio::bind_allocator(allocator, std::move(on_host)));
  }

 private:
  Handler handler_;
  boost::asio::io_context::executor_type host_executor_;
  boost::asio::executor_work_guard<executor_type> work_;
  boost::asio::cancellation_slot slot_;
};

/// Submits one run_operation to the host's pool and wires up its cancellation slot.
template <run_delivery Delivery, class Value>
struct initiate_run {
  asio_host* host;
  call_options options;

  template <class Handler, class Fn, class Arg>
  void operator()(Handler&& handler, Fn&& fn, Arg&& arg) const {
    run_operation<std::decay_t<Handler>, Value, Delivery> op(std::forward<Handler>(handler),
                                                             host->context().get_executor());
    // asio_host::submit throws std::logic_error off its own thread (a thread that is no
    // host, or another asio_host's, whose loop would answer the call and whose host would
    // take its cancellation's id for one of its own). An initiating function reports
    // through its completion instead (so a handler is still called exactly once, and
    // use_future / use_awaitable raise it where the result is awaited): nothing of the pool
    // is touched here, and completing posts to the host's io_context, which any thread may do.
    if (!host->on_its_thread()) {
      op(result<Value>(make_error_code(errc::wrong_thread)));
      return;
    }
    run_canceller* canceller = nullptr;
    if (op.slot().is_connected())
      canceller = &op.slot().template emplace<run_canceller>(run_canceller{host});
    call_id id = 0;
    // On rejection submit() leaves `op` unmoved (it moves it into the call record only once
    // the call is admitted), so the rejection completes through the same operation.
    std::error_code ec =
        host->submit(std::forward<Fn>(fn), std::forward<Arg>(arg), std::move(op), options, &id);
    if (ec) {
      op(result<Value>(ec));
    } else if (canceller) {
      canceller->id = id;
    }
  }
};

}  // namespace detail

/// @brief Runs `fn(std::move(arg))` on a pool worker as an Asio asynchronous operation.
///
/// Completion signature: `void(boost::system::error_code ec, R value)`, where `R` is what
/// `fn` returns (knit::unit for `void`; it must be default-constructible, since a value is
/// passed alongside an error). Errors are values, never exceptions thrown by async_run
/// (only std::bad_alloc, as from any Asio initiating function, can leave it):
///  - success: `ec` is empty and `value` is the task's result;
///  - `ec == knit::errc::queue_full` or `knit::errc::shut_down`: the pool did not accept the
///    call (the task never runs);
///  - `ec == knit::errc::timed_out`: `options.timeout` passed (queue wait counted);
///  - `ec == knit::errc::cancelled`: the call was cancelled before a worker started it (by
///    the handler's cancellation slot, or by pool::shutdown(shutdown_mode::cancel)), or
///    shutdown's deadline passed;
///  - `ec == knit::errc::stuck`: the call ran past pool_options::stuck_after;
///  - `ec == knit::errc::task_failed`: the task threw. The exception object is not in this
///    signature; use knit::async_run_result to receive it;
///  - `ec == knit::errc::wrong_thread`: async_run was called off the thread that built
///    `host` (a thread that is no host of the pool, or another asio_host's: a programming
///    error, the task never runs). Like every error it arrives through the completion,
///    posted to the host's io_context, never thrown; asio_host::submit and pool::submit
///    throw std::logic_error in that case instead.
///
/// `ec` is of knit::boost_error_category(): `ec.category().name()` is "knit", `ec.value()`
/// the knit::errc number (stable: it prints as "knit:2" for timed_out in every run), and
/// `ec.message()` knit::error_category()'s text. Compare it with knit::errc values
/// (`ec == knit::errc::timed_out`, knit::operator== above). With use_awaitable and
/// use_future a non-empty `ec` is thrown as boost::system::system_error; use as_tuple to
/// get it as a value instead.
///
/// The operation honours the handler's associated executor (default: the host's
/// io_context; a work guard keeps it busy until the handler has run; the completion is
/// posted to the host's io_context and dispatched from there, so the handler never runs
/// inside async_run or inside pool::drain()), associated allocator (used for both hops)
/// and associated cancellation slot (see detail::run_canceller: any cancellation type
/// abandons a call not yet started; a running call finishes). Call it on the thread that
/// built `host` (from any other thread it completes with errc::wrong_thread).
///
/// @param host    the asio_host whose pool runs the call
/// @param fn      the task; moved into the call record
/// @param arg     its argument; moved into the call record and then into `fn`
/// @param token   an Asio completion token
/// @param options per-call options (deadline)
template <class Fn, class Arg, class Token>
auto async_run(asio_host& host, Fn&& fn, Arg&& arg, Token&& token, call_options options = {}) {
  using value_type = detail::run_value_t<Fn, Arg>;
  static_assert(std::is_default_constructible_v<value_type>,
                "knit::async_run: the result type must be default-constructible (it is passed "
                "alongside an error); "
                "use knit::async_run_result otherwise");
  return boost::asio::async_initiate<Token, void(boost::system::error_code, value_type)>(
      detail::initiate_run<detail::run_delivery::error_and_value, value_type>{&host, options},
      token, std::forward<Fn>(fn), std::forward<Arg>(arg));
}

/// @brief async_run completing with the whole knit::result: `void(knit::result<R>)`.
///
/// For callers that need the exception a task threw (`result.exception()`, or
/// `result.value()`, which rethrows it) or whose `R` is not default-constructible. Every
/// other behaviour (executor, allocator, cancellation, errors) is async_run's. With
/// use_awaitable the co_await yields the result and never throws.
template <class Fn, class Arg, class Token>
auto async_run_result(asio_host& host, Fn&& fn, Arg&& arg, Token&& token,
                      call_options options = {}) {
  using value_type = detail::run_value_t<Fn, Arg>;
  return boost::asio::async_initiate<Token, void(result<value_type>)>(
      detail::initiate_run<detail::run_delivery::result, value_type>{&host, options}, token,
      std::forward<Fn>(fn), std::forward<Arg>(arg));
}

}  // namespace knit

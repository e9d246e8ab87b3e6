// knit/async_run.hpp: pool calls as an Asio asynchronous operation, usable with any
// completion token (callbacks, use_future, use_awaitable, deferred).
#pragma once

#include <exception>
#include <memory>
#include <system_error>
#include <type_traits>
#include <utility>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include "knit/asio_host.hpp"

namespace knit {

namespace detail {
template <class Fn, class Arg>
using run_value_t = std::conditional_t<std::is_void_v<std::invoke_result_t<std::decay_t<Fn>&, std::decay_t<Arg>&&>>, unit,
                                       std::invoke_result_t<std::decay_t<Fn>&, std::decay_t<Arg>&&>>;
}

// Runs fn(std::move(arg)) on a pool worker and completes `token` with
// void(std::exception_ptr, R): a null exception_ptr and the value, or the task's own
// exception, or a std::system_error carrying knit::errc (queue_full, shut_down, timed_out,
// cancelled). The handler runs through its associated executor (default: the host's
// io_context), never inside async_run, and a work guard keeps that executor's context
// running until it has run.
template <class Fn, class Arg, class Token>
auto async_run(asio_host& host, Fn&& fn, Arg&& arg, Token&& token, call_options options = {}) {
  using value_type = detail::run_value_t<Fn, Arg>;
  static_assert(std::is_default_constructible_v<value_type>,
                "knit::async_run: the result type must be default-constructible (it is passed alongside an error)");
  return boost::asio::async_initiate<Token, void(std::exception_ptr, value_type)>(
      [&host, options](auto handler, auto f, auto a) {
        auto executor = boost::asio::get_associated_executor(handler, host.context().get_executor());
        auto work = boost::asio::make_work_guard(executor);
        using handler_type = decltype(handler);
        // The completion is moved into the call record, so it must be movable (it is) and
        // it is called at most once: either here on rejection, or by the pool.
        auto complete = std::make_shared<handler_type>(std::move(handler));
        std::error_code ec = host.submit(
            std::move(f), std::move(a),
            [complete, work](result<value_type> r) mutable {
              auto ex = work.get_executor();
              std::exception_ptr error;
              value_type value{};
              if (r.ok()) {
                value = std::move(r).value();
              } else {
                error = r.exception() ? r.exception() : std::make_exception_ptr(std::system_error(r.error()));
              }
              boost::asio::dispatch(ex, [complete, error, value = std::move(value)]() mutable {
                (*complete)(error, std::move(value));
              });
              work.reset();
            },
            options);
        if (ec) {
          boost::asio::post(executor, [complete, ec]() mutable {
            (*complete)(std::make_exception_ptr(std::system_error(ec)), value_type{});
          });
        }
      },
      token, std::forward<Fn>(fn), std::forward<Arg>(arg));
}

}  // namespace knit

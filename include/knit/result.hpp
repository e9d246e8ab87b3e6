// result<R>: what a call's completion handler receives: a value, or an error (and, for a
// task that threw, its exception).
#pragma once

#include <exception>
#include <optional>
#include <system_error>
#include <utility>

#include "knit/error.hpp"

namespace knit {

/// @brief Stands in for `void`, so a task returning nothing still has a result type:
/// its handler receives a knit::result<knit::unit>.
struct unit {
  /// Every unit equals every other.
  friend bool operator==(unit, unit) = default;
};

/// @brief What a call's completion handler receives: the task's value, or an error code
/// (knit::errc) and, for a task that threw, its exception.
///
/// @tparam R the task's return type (knit::unit for `void`).
template <class R>
class result {
 public:
  /// A successful result holding `value`.
  explicit result(R value) : value_(std::move(value)) {}
  /// A failed result: `ec` says why (an errc), `ex` is the task's exception when
  /// `ec == errc::task_failed`.
  explicit result(std::error_code ec, std::exception_ptr ex = nullptr)
      : error_(ec), exception_(std::move(ex)) {}

  /// True when the result holds a value.
  bool ok() const noexcept { return value_.has_value(); }
  /// Same as ok().
  explicit operator bool() const noexcept { return ok(); }

  /// The value. Without one: rethrows the task's exception, else throws std::system_error
  /// carrying error().
  R& value() & {
    throw_if_error();
    return *value_;
  }
  /// The value, moved out. Without one: rethrows the task's exception, else throws
  /// std::system_error carrying error().
  R&& value() && {
    throw_if_error();
    return std::move(*value_);
  }

  /// Why there is no value (an errc); empty when ok().
  std::error_code error() const noexcept { return error_; }
  /// The task's exception: non-null only when the task threw (error() == errc::task_failed).
  const std::exception_ptr& exception() const noexcept { return exception_; }

 private:
  void throw_if_error() const {
    if (value_) return;
    if (exception_) std::rethrow_exception(exception_);
    throw std::system_error(error_);
  }

  std::optional<R> value_;
  std::error_code error_;
  std::exception_ptr exception_;
};

}  // namespace knit

// result<R>: what a call's completion handler receives: a value, or an error (and, for a
// task that threw, its exception).
#pragma once

#include <exception>
#include <optional>
#include <system_error>
#include <utility>

#include "knit/error.hpp"

namespace knit {

// Stands in for `void` so a task returning nothing still has a result type.
struct unit {
  friend bool operator==(unit, unit) = default;
};

template <class R>
class result {
 public:
  explicit result(R value) : value_(std::move(value)) {}
  explicit result(std::error_code ec, std::exception_ptr ex = nullptr)
      : error_(ec), exception_(std::move(ex)) {}

  bool ok() const noexcept { return value_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }

  // The value. Without one: rethrows the task's exception, else throws std::system_error.
  R& value() & {
    throw_if_error();
    return *value_;
  }
  R&& value() && {
    throw_if_error();
    return std::move(*value_);
  }

  std::error_code error() const noexcept { return error_; }
  // Non-null only when the task threw (error() == errc::task_failed).
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

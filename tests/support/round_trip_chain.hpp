// round_trip_chain: one call at a time through a host (knit::asio_host, or anything with
// pool::submit's shape), each result checked and the next call submitted from its handler:
// a lost wake stops the chain, which the test sees as done() short of its rounds.
#pragma once

#include <gtest/gtest.h>

#include "knit/result.hpp"

namespace knit_test {

template <class Host>
class round_trip_chain {
 public:
  round_trip_chain(Host& host, int rounds) : host_(host), rounds_(rounds) {}
  round_trip_chain(const round_trip_chain&) = delete;
  round_trip_chain& operator=(const round_trip_chain&) = delete;

  void start() { submit(0); }
  int done() const noexcept { return done_; }
  bool finished() const noexcept { return done_ == rounds_; }

 private:
  // Each call returns its argument + 1, so result k is k + 1.
  void submit(int x) {
    ASSERT_FALSE(
        host_.submit([](int v) { return v + 1; }, x, [this](knit::result<int> r) { arrived(r); }));
  }
  void arrived(knit::result<int>& r) {
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r.value(), done_ + 1);
    if (++done_ < rounds_) submit(done_);
  }

  Host& host_;
  const int rounds_;
  int done_ = 0;
};

}  // namespace knit_test

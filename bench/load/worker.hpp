// One event-loop thread: an epoll set, a timer, and its share of every route's connections.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "clock.hpp"
#include "connection.hpp"
#include "driver.hpp"
#include "stats.hpp"

namespace knit_load {

// One route's share of connections (and, in open loop, of the rate) on one worker.
struct route_slice {
  std::size_t route_index = 0;
  const std::string* request = nullptr;
  bool head_request = false;
  std::uint32_t connections = 0;
  double rate = 0.0;  // 0: closed loop
  std::unique_ptr<route_driver> driver;
  route_load_stats stats;
  // Completed responses, read by the progress printer on another thread.
  std::atomic<std::uint64_t> completed{0};
};

struct slice_spec {
  std::size_t route_index = 0;
  const std::string* request = nullptr;
  bool head_request = false;
  std::uint32_t connections = 0;
  double rate = 0.0;
};

class load_worker final : public request_sink {
 public:
  // Creates the epoll set and timer (throws std::system_error), no connections yet.
  load_worker(const endpoint& target, nanos timeout, const std::vector<slice_spec>& slices);
  ~load_worker();
  load_worker(const load_worker&) = delete;
  load_worker& operator=(const load_worker&) = delete;

  // Connects everything, then calls `start` (which waits for the other workers and returns
  // the shared t0), then runs the window [t0, t0 + duration). Counts only what completes
  // inside it; requests still in flight at the end are recorded as in_flight_at_end.
  void run(const std::function<nanos()>& start, nanos duration);

  const std::vector<std::unique_ptr<route_slice>>& slices() const { return slices_; }

  void send(client_connection& c, nanos intended, nanos now) override;

 private:
  static constexpr int kMaxEvents = 256;
  static constexpr std::size_t kReadBufferBytes = 64 * 1024;
  // Timeouts and connect retries are checked on this tick rather than with a timer each.
  static constexpr nanos kHousekeepingPeriod = 10 * kNanosPerMilli;
  static constexpr nanos kConnectRetryDelay = 50 * kNanosPerMilli;
  static constexpr nanos kWarmupLimit = 2 * kNanosPerSecond;

  void warm_up();
  void handle(client_connection& c, std::uint32_t events, nanos now);
  void on_connect_result(client_connection& c, connection_event ev, nanos now);
  // Counts `kind` (inside the window), then closes and reconnects.
  void fail(client_connection& c, error_kind kind, nanos now);
  void reopen(client_connection& c, nanos now);
  void housekeeping(nanos now);
  void arm_timer(nanos deadline);
  void finish();

  endpoint target_;
  nanos timeout_;
  int epoll_fd_ = -1;
  int timer_fd_ = -1;
  nanos armed_ = kNever;
  bool running_ = false;  // inside the measured window
  nanos end_ = kNever;
  std::vector<std::unique_ptr<route_slice>> slices_;
  std::vector<std::unique_ptr<client_connection>> connections_;
  std::vector<char> read_buf_;
};

}  // namespace knit_load

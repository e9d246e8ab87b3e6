// The servers of every event loop (KNIT_HOSTS) as one, for what acts on all of them at once: the
// stop, its deadline, and the knit-stats line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loops/server.hpp"

namespace knit_server {

// It holds the H servers (KNIT_HOSTS=H), each run by its own thread, and is used from the
// control thread (signals and the stop deadline, main.cpp): every call here is one each
// server takes from another thread (server.hpp).
class server_group {
 public:
  server_group() = default;
  server_group(const server_group&) = delete;
  server_group& operator=(const server_group&) = delete;

  // Adds host i's server, i = size(). Call on the control thread before any other call;
  // knit-stats lists the hosts in this order. `s` must outlive the group's use.
  void add(server& s) { servers_.push_back(&s); }

  std::size_t size() const noexcept { return servers_.size(); }

  // One server whose loop N threads run (KNIT_MODE=multi).
  bool multi_thread() const noexcept {
    return servers_.size() == 1 && servers_.front()->multi_thread();
  }

  // server::stop on every server (the same protocol on each). `drained` is called once, when
  // the last of them has drained, on that one's loop (posted, never from inside stop()).
  void stop(std::function<void()> drained);

  // server::cut_slow_clients on every server.
  void cut_slow_clients();

  // Open connections, every host's together.
  std::size_t connections() const;

  // The knit-stats line (format_stats_line): the counters and gauges added up over every
  // host, and "hosts" with each one's part. Each host's counters are read once, so the
  // parts add up to the totals in the same line.
  std::string stats_line(std::uint64_t log_dropped, std::optional<std::string_view> pool_json,
                         std::optional<std::string_view> auto_json) const;

 private:
  std::vector<server*> servers_;
};

}  // namespace knit_server

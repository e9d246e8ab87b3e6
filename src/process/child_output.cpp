// The forwarder (child_output.hpp): its thread, its epoll set, and each child's line so far.
#include "process/child_output.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "log_line.hpp"

namespace knit::detail {
namespace {

using output_clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// One child's pipe. Made by the spawning thread under the mutex; read, written and erased by
// the forwarder's thread only.
struct source {
  unique_fd fd;
  std::string name;                 // "knit-proc-N"
  std::string prefix;               // "knit-proc-N (pid P): "
  std::string line;                 // the line so far, at most child_output_line_max bytes
  bool cutting = false;             // the line passed the bound: dropped up to its newline
  output_clock::time_point window;  // the start of this source's current second
  std::size_t bytes = 0;            // read in that second
  unsigned reads = 0;               // wakes in that second
  bool told = false;                // "held back" said
};

class forwarder {
 public:
  // Created on the first child, never destroyed: its thread blocks in epoll_wait for the life
  // of the process, and no static destructor may pull its state from under it.
  static forwarder& instance() {
    static forwarder* f = new forwarder();
    return *f;
  }

  bool add(unique_fd fd, unsigned number, pid_t pid) {
    std::lock_guard lock(mutex_);
    const std::uint64_t id = ++next_id_;
    source& s = sources_[id];  // a node of its own: its address stays while others come
    s.name = "knit-proc-" + std::to_string(number);
    s.prefix = s.name + " (pid " + std::to_string(pid) + "): ";
    s.fd = std::move(fd);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLONESHOT;
    ev.data.u64 = id;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, s.fd.get(), &ev) != 0) {
      sources_.erase(id);
      return false;
    }
    return true;
  }

 private:
  forwarder() : epoll_(::epoll_create1(EPOLL_CLOEXEC)) {
    if (!epoll_) throw std::system_error(errno, std::generic_category(), "epoll_create1");
    std::thread([this] { run(); }).detach();
  }

  source* find(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    const auto it = sources_.find(id);
    return it == sources_.end() ? nullptr : &it->second;
  }

  [[noreturn]] void run() {
    epoll_event events[64];
    for (;;) {
      const int n = ::epoll_wait(epoll_.get(), events, 64, release_timeout_ms());
      for (int i = 0; i < n; ++i) serve(events[i].data.u64);
      release_due();
    }
  }

  // Until the first held source's second ends (-1: none held).
  int release_timeout_ms() const {
    if (held_.empty()) return -1;
    auto first = held_.front().first;
    for (const auto& h : held_) first = std::min(first, h.first);
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(first - output_clock::now());
    return static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 1000));
  }

  void release_due() {
    const auto now = output_clock::now();
    for (std::size_t i = 0; i < held_.size();) {
      if (held_[i].first > now) {
        ++i;
        continue;
      }
      if (source* s = find(held_[i].second)) arm(*s, held_[i].second);
      held_[i] = held_.back();
      held_.pop_back();
    }
  }

  void arm(source& s, std::uint64_t id) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLONESHOT;
    ev.data.u64 = id;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, s.fd.get(), &ev) != 0) finish(s, id);
  }

  // One read of one source's pipe (level-triggered in effect: re-armed while data is left).
  void serve(std::uint64_t id) {
    source* s = find(id);
    if (!s) return;
    const auto now = output_clock::now();
    if (now - s->window >= 1s) {
      s->window = now;
      s->bytes = 0;
      s->reads = 0;
    }
    char buf[16 * 1024];
    const std::size_t room = std::min(sizeof buf, child_output_bytes_per_second - s->bytes);
    const ssize_t n = ::read(s->fd.get(), buf, room);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return arm(*s, id);
    if (n <= 0) return finish(*s, id);  // EOF: every write end is closed; or a broken pipe
    s->bytes += static_cast<std::size_t>(n);
    ++s->reads;
    take(*s, std::string_view(buf, static_cast<std::size_t>(n)));
    const bool over_bytes = s->bytes >= child_output_bytes_per_second;
    if (!over_bytes && s->reads < child_output_reads_per_second) return arm(*s, id);
    // Not watched until this second ends: the child's own pipe fills meanwhile.
    if (over_bytes && !s->told) {
      s->told = true;
      log_line(s->name + ": output held back (over 64 KiB/s)");
    }
    held_.emplace_back(s->window + 1s, id);
  }

  void finish(source& s, std::uint64_t id) {
    if (!s.line.empty() && !s.cutting) emit(s, s.line);
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, s.fd.get(), nullptr);
    std::lock_guard lock(mutex_);
    sources_.erase(id);  // closes the read end
  }

  // Splits what was read into lines (child_output.hpp).
  void take(source& s, std::string_view data) {
    while (!data.empty()) {
      const std::size_t nl = data.find('\n');
      const std::string_view part = data.substr(0, nl);
      if (!s.cutting) {
        const std::size_t fit = std::min(part.size(), child_output_line_max - s.line.size());
        s.line.append(part.data(), fit);
        if (fit < part.size()) {
          emit(s, s.line + " [cut]");
          s.line.clear();
          s.cutting = true;
        }
      }
      if (nl == std::string_view::npos) return;
      if (!s.cutting) emit(s, s.line);
      s.line.clear();
      s.cutting = false;
      data.remove_prefix(nl + 1);
    }
  }

  // One line, prefixed, to the program's log sink (knit/log.hpp; by default the host's
  // stderr, never waited on past 100 ms); control bytes shown as '?' (no escape sequence of
  // a task's reaches the host's terminal).
  void emit(const source& s, std::string_view line) {
    std::string out = s.prefix;
    out.reserve(out.size() + line.size());
    for (char c : line) {
      const auto u = static_cast<unsigned char>(c);
      out.push_back((u < 0x20 && c != '\t') || u == 0x7f ? '?' : c);
    }
    log_line(out);
  }

  unique_fd epoll_;
  std::mutex mutex_;  // sources_ and next_id_: add() on the spawning thread, the rest here
  std::unordered_map<std::uint64_t, source> sources_;
  std::uint64_t next_id_ = 0;
  // The forwarder's thread only:
  std::vector<std::pair<output_clock::time_point, std::uint64_t>> held_;  // until, source
};

}  // namespace

bool forward_child_output(unique_fd read_end, unsigned number, pid_t pid) noexcept {
  try {
    return forwarder::instance().add(std::move(read_end), number, pid);
  } catch (const std::exception&) {
    return false;  // no epoll set, no thread, or no memory: read_end closed on the way out
  }
}

}  // namespace knit::detail

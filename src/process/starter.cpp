// The starter thread and the worker boxes (starter.hpp), and end_child (it unwatches).
#include "process/starter.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "process/counters.hpp"
#include "process/exit_status.hpp"
#include "process/pidfd.hpp"
#include "process/slot_bell.hpp"
#include "process/task_registry.hpp"

namespace knit::detail {
namespace {

using steady = std::chrono::steady_clock;

}  // namespace

// The process-wide starter. Created on first use and never destroyed: its thread blocks in
// poll for the life of the process (children it spawned keep a PDEATHSIG tied to it), and a
// static destructor must not pull its state from under it at exit.
class starter {
 public:
  static starter& instance() {
    static starter* s = new starter();  // leaked on purpose (above)
    return *s;
  }

  // Queues a start of `box` at `at`. Called with the box's mutex held (lock order: box,
  // then starter).
  void schedule(std::shared_ptr<worker_box> box, steady::time_point at) {
    {
      std::lock_guard lock(mutex_);
      starts_.emplace(at, std::move(box));
    }
    nudge();
  }

  // Queues box->recheck_degraded() at `at`. Called with the box's mutex held (lock order:
  // box, then starter). Weak: a box ended meanwhile needs none.
  void schedule_recheck(std::weak_ptr<worker_box> box, steady::time_point at) {
    {
      std::lock_guard lock(mutex_);
      rechecks_.emplace(at, std::move(box));
    }
    nudge();
  }

  // Watches a dup of `c`'s pidfd; its end becomes box->replace(id).
  void watch(const child_process& c, const std::shared_ptr<worker_box>& box) {
    const int fd = ::fcntl(c.pidfd.get(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return;  // unwatched: its end is then seen by its ring alone
    {
      std::lock_guard lock(mutex_);
      watches_.push_back({fd, c.id, c.end, box});
    }
    nudge();
  }

  // Stops watching child `id` and closes its dup now (the caller is about to reap it: no fd
  // may outlive it). The starter may be polling the closed number: it checks ids after poll.
  void unwatch(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    for (auto it = watches_.begin(); it != watches_.end(); ++it) {
      if (it->id == id) {
        ::close(it->fd);
        watches_.erase(it);
        break;
      }
    }
  }

  std::uint64_t next_id() { return next_id_.fetch_add(1, std::memory_order_relaxed); }

 private:
  struct watch_entry {
    int fd;
    std::uint64_t id;
    std::shared_ptr<child_end> end;
    std::weak_ptr<worker_box> box;
  };

  starter() : nudge_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    std::thread([this] { run(); }).detach();
  }

  void nudge() {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(nudge_fd_, &one, sizeof one);
  }

  void run() {
    std::vector<pollfd> fds;
    std::vector<std::uint64_t> ids;
    for (;;) {
      int timeout_ms = -1;
      {
        std::lock_guard lock(mutex_);
        fds.assign(1, pollfd{nudge_fd_, POLLIN, 0});
        ids.assign(1, 0);
        for (const watch_entry& w : watches_) {
          fds.push_back({w.fd, POLLIN, 0});
          ids.push_back(w.id);
        }
        std::optional<steady::time_point> next;
        if (!starts_.empty()) next = starts_.begin()->first;
        if (!rechecks_.empty() && (!next || rechecks_.begin()->first < *next)) {
          next = rechecks_.begin()->first;
        }
        if (next) {
          const auto wait = *next - steady::now();
          timeout_ms =
              wait <= steady::duration::zero()
                  ? 0
                  : static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(wait).count());
        }
      }
      ::poll(fds.data(), fds.size(), timeout_ms);
      if (fds[0].revents) {
        std::uint64_t count;
        [[maybe_unused]] ssize_t n = ::read(nudge_fd_, &count, sizeof count);
      }
      // Deaths: each id still watched whose fd was readable. Taken out of the watches (an
      // owner's unwatch then finds nothing to close) and reaped here, at once, before the
      // fd is closed: an idle child's owner may not look at it again for a long time.
      std::vector<watch_entry> ended;
      {
        std::lock_guard lock(mutex_);
        for (std::size_t i = 1; i < fds.size(); ++i) {
          if (!fds[i].revents) continue;
          for (auto it = watches_.begin(); it != watches_.end(); ++it) {
            if (it->id != ids[i]) continue;
            ended.push_back(std::move(*it));
            watches_.erase(it);
            break;
          }
        }
      }
      for (watch_entry& w : ended) {
        // A death with no call in flight is reported by no call: counted here (before the
        // reap, so whoever sees it reaped sees it counted). One during a call is its
        // caller's to count (a crash, or a sandbox kill, counted apart).
        if (!w.end->in_call.load(std::memory_order_acquire)) count_crash_once(*w.end);
        reap(*w.end, w.fd);
        ::close(w.fd);
        if (auto box = w.box.lock()) box->replace(w.id, /*crash=*/true);
      }
      // Degraded re-evaluations that are due (out of the starter's lock: each takes its box's).
      std::vector<std::weak_ptr<worker_box>> due;
      {
        std::lock_guard lock(mutex_);
        const auto now = steady::now();
        while (!rechecks_.empty() && rechecks_.begin()->first <= now) {
          due.push_back(std::move(rechecks_.begin()->second));
          rechecks_.erase(rechecks_.begin());
        }
      }
      for (const auto& weak : due) {
        if (auto box = weak.lock()) box->recheck_degraded();
      }
      // Starts that are due, one at a time (each is bounded by its start_timeout).
      for (;;) {
        std::shared_ptr<worker_box> box;
        {
          std::lock_guard lock(mutex_);
          if (starts_.empty() || starts_.begin()->first > steady::now()) break;
          box = std::move(starts_.begin()->second);
          starts_.erase(starts_.begin());
        }
        run_start(box);
      }
    }
  }

  void run_start(const std::shared_ptr<worker_box>& box) {
    {
      std::lock_guard lock(box->mutex_);
      if (box->abandoned_) {
        box->scheduled_ = false;
        box->changed_.notify_all();
        return;
      }
      box->starting_ = true;
    }
    std::optional<child_process> child;
    std::optional<worker_box::start_failure_record> failure;
    try {
      child = start_child(box->number(), box->options(), box->cpus());
      child->id = next_id();
    } catch (const process_error& e) {
      // Its words copied out, not the exception: copies of a std::runtime_error share one
      // reference-counted string, released here while the taking thread reads it.
      failure =
          worker_box::start_failure_record{static_cast<errc>(e.code().value()), message_of(e)};
    }
    std::unique_lock lock(box->mutex_);
    box->scheduled_ = false;
    if (child) {
      // Counted before the child is in the box (a ring that takes it sees it counted), and
      // respawned before children_started (whoever sees the start sees its respawn). A box
      // abandoned meanwhile owes none (abandon() dropped lost_).
      if (box->lost_ > 0) {
        --box->lost_;
        counters().respawned.fetch_add(1, std::memory_order_relaxed);
      }
      counters().children_started.fetch_add(1, std::memory_order_relaxed);
    }
    if (box->abandoned_) {
      // Still starting_ while it ends: abandon() returns only once this child is reaped and
      // unmapped (a wake of abandon() in this window would otherwise return with it alive).
      lock.unlock();
      if (child) end_child(*child, /*kill=*/true);
      lock.lock();
    } else if (child) {
      watch(*child, box);
      box->ready_ = std::move(child);
    } else {
      box->failed_ = std::move(failure);
    }
    box->starting_ = false;
    // A host ring waits in its event loop, not on changed_: its eventfd says "look".
    if (box->listener_ >= 0) {
      const std::uint64_t one = 1;
      [[maybe_unused]] ssize_t n = ::write(box->listener_, &one, sizeof one);
    }
    box->changed_.notify_all();
  }

  std::mutex mutex_;
  std::multimap<steady::time_point, std::shared_ptr<worker_box>> starts_;
  std::multimap<steady::time_point, std::weak_ptr<worker_box>> rechecks_;
  std::vector<watch_entry> watches_;
  std::atomic<std::uint64_t> next_id_{1};
  int nudge_fd_;
};

worker_box::worker_box(unsigned number, process_options options, const cpu_set_t& cpus,
                       std::uint64_t batch)
    : number_(number),
      options_(std::move(options)),
      cpus_(cpus),
      batch_(batch),
      crash_loop_(options_.crash_loop_crashes, options_.crash_loop_window, options_.backoff_initial,
                  options_.backoff_max) {}

void worker_box::schedule_locked(crash_loop::clock::time_point at) {
  scheduled_ = true;
  starter::instance().schedule(shared_from_this(), at);
}

void worker_box::set_degraded_locked(bool degraded) {
  if (degraded != degraded_) {
    if (degraded) {
      counters().degraded_workers.fetch_add(1, std::memory_order_relaxed);
    } else {
      counters().degraded_workers.fetch_sub(1, std::memory_order_relaxed);
    }
    degraded_ = degraded;
  }
  // One re-evaluation queued while degraded: a new crash only moves the end later, so one
  // due early finds the worker still degraded and queues the next.
  if (degraded_ && !abandoned_ && !recheck_scheduled_) {
    recheck_scheduled_ = true;
    starter::instance().schedule_recheck(weak_from_this(),
                                         crash_loop_.clears_at(crash_loop::clock::now()));
  }
}

void worker_box::recheck_degraded() {
  std::lock_guard lock(mutex_);
  recheck_scheduled_ = false;
  if (abandoned_) return;
  set_degraded_locked(crash_loop_.degraded(crash_loop::clock::now()));
}

bool worker_box::replace(std::uint64_t id, bool crash) {
  std::lock_guard lock(mutex_);
  if (abandoned_ || id == handled_id_) return degraded_;
  handled_id_ = id;
  const auto now = crash_loop::clock::now();
  if (ready_ && ready_->id == id) {
    // A child started ahead that died before any ring took it: no ring will see it,
    // so it is reaped and counted here.
    count_crash_once(*ready_->end);
    end_child(*ready_, /*kill=*/false);
    ready_.reset();
  }
  if (crash) {
    crash_loop_.record_crash(now);
    set_degraded_locked(crash_loop_.degraded(now));
  }
  // Lost until this box's next start replaces it (a respawn), or the box is abandoned.
  ++lost_;
  if (!scheduled_ && !ready_ && !failed_) schedule_locked(crash_loop_.respawn_at(now));
  return degraded_;
}

void worker_box::want_child() {
  std::lock_guard lock(mutex_);
  if (abandoned_ || scheduled_ || ready_ || failed_) return;
  schedule_locked(crash_loop_.respawn_at(crash_loop::clock::now()));
}

child_process worker_box::take() {
  std::unique_lock lock(mutex_);
  if (!abandoned_ && !scheduled_ && !ready_ && !failed_) {
    schedule_locked(crash_loop_.respawn_at(crash_loop::clock::now()));
  }
  // Bounded: a scheduled start begins by its backoff (at most backoff_max) and ends within
  // start_timeout.
  changed_.wait(lock, [&] { return ready_ || failed_ || abandoned_; });
  return take_locked();
}

std::optional<child_process> worker_box::try_take() {
  std::lock_guard lock(mutex_);
  if (!abandoned_ && !scheduled_ && !ready_ && !failed_) {
    schedule_locked(crash_loop_.respawn_at(crash_loop::clock::now()));
  }
  if (!ready_ && !failed_ && !abandoned_) return std::nullopt;
  return take_locked();
}

void worker_box::set_listener(int eventfd) {
  std::lock_guard lock(mutex_);
  listener_ = eventfd;
}

child_process worker_box::take_locked() {
  if (ready_) {
    child_process c = std::move(*ready_);
    ready_.reset();
    // The spare (process_options::spare_child): the next child is started now, so the one
    // taken is replaced, when it ends, by a child already up. At the crash loop's time: a
    // spare taken after a crash is that crash's replacement, and the one after it a
    // respawn, which a degraded worker's backoff holds back.
    if (options_.spare_child && !abandoned_ && !scheduled_ && !failed_) {
      schedule_locked(crash_loop_.respawn_at(crash_loop::clock::now()));
    }
    return c;
  }
  if (abandoned_) throw process_error(errc::worker_start_failed, "knit: process worker stopped");
  const start_failure_record failed = std::move(*failed_);
  failed_.reset();
  // A failed start counts as a crash (the crash loop bounds the retries); the next call on
  // this worker schedules the next try. No retry is scheduled here: a binary that cannot
  // start would otherwise keep spawning with no one calling.
  const auto now = crash_loop::clock::now();
  crash_loop_.record_crash(now);
  set_degraded_locked(crash_loop_.degraded(now));
  counters().crashes.fetch_add(1, std::memory_order_relaxed);
  ++lost_;
  if (degraded_) {
    throw process_error(failed.code, failed.message + "; crash loop: respawns back off");
  }
  throw process_error(failed.code, failed.message);
}

bool worker_box::still_degraded() {
  std::lock_guard lock(mutex_);
  set_degraded_locked(crash_loop_.degraded(crash_loop::clock::now()));
  return degraded_;
}

void worker_box::abandon() {
  std::optional<child_process> child;
  {
    std::unique_lock lock(mutex_);
    abandoned_ = true;
    listener_ = -1;
    lost_ = 0;  // never replaced: no later start is their respawn
    changed_.wait(lock, [&] { return !starting_; });
    child = std::move(ready_);
    ready_.reset();
    set_degraded_locked(false);
  }
  if (child) end_child(*child, /*kill=*/true);
}

void worker_box::wait_started() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !scheduled_ || abandoned_; });
}

std::optional<std::string> worker_box::start_failure() {
  std::lock_guard lock(mutex_);
  if (!failed_) return std::nullopt;
  return failed_->message;
}

std::string end_child(child_process& c, bool kill) {
  if (c.id != 0) starter::instance().unwatch(c.id);
  // Harmless once it is reaped: the pidfd names this process, never a reused pid.
  if (kill) signal_pidfd(c.pidfd.get(), SIGKILL);
  return reap(*c.end, c.pidfd.get());
}

}  // namespace knit::detail

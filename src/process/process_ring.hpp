// process_ring: a pool host's own worker processes, called with no worker thread between.
// One per host_state when process tasks are registered; every step runs on that host's
// thread and never blocks. The choice of child is child_choice.hpp's; deaths, limits and
// broken protocols are process_ring_ends.cpp's.
//
// Protocol (host h <-> each of its children c; the child's side is child_loop.cpp, the words
// and the lanes shared_region.hpp's, version 6)
//   Up to `lanes` calls (process_options::lanes) in one child at once, in its lanes in turn:
//   the oldest runs, the ones behind it wait in the mapping, and the child starts the next
//   the moment it has answered one. Beyond that a call waits in this ring's FIFO in host
//   memory, and is bound to a child only when one has a free lane (child_choice.hpp).
//   Words (region_header, lane_words), writer -> partner:
//     lane: task_index, request_bytes, request_seq   host h -> child (release on request_seq)
//     lane: answer_status, answer_bytes, answer_seq  child -> host h (release on answer_seq)
//     lane: claim    host h and child: host h stores 0 before request_seq; the child CASes
//                    it to ~seq as it starts the call, host h CASes it from 0 to seq to
//                    take back a call not started (a move, a cancel); whichever lands
//                    first decides, so a call taken back never runs. Host h takes back
//                    only from 0: a word a task scribbled there is no proof that its
//                    call did not start, so that call stays (and never runs a third time)
//     child_sleeping   child -> host h: read after host h's fence, before it rings `request`
//     host_sleeping    host h -> child: held at 1 (the child always rings `answer`)
//     sandbox_syscall  child's SIGSYS handler -> host h: only names a call, read once after
//                      a death the kernel reports as the sandbox's (sandbox.hpp)
//   request_seq is the call's nonce (call_nonce.hpp), unpredictable to the child: an answer
//   is the call's only when its answer_seq equals it. Any other value in answer_seq is no
//   answer yet (a stale or forged one is never taken); a matching answer whose status or
//   length is out of range is a broken protocol: the child is killed, its oldest call fails
//   (worker_crashed), the calls behind it are sent again.
//   Send (host h, lane k = the child's next in turn, free: its last answer taken): copy the
//     request into lane k's arena, task_index, request_bytes, claim = 0, request_seq
//     (release), then
//     ring_if_sleeping(child_sleeping, request): a write to a pipe only the host holds,
//     non-blocking, so no word or fd the child controls can make it block.
//   Answer (child): lane words, answer_seq (release), then it writes its `answer` eventfd.
//   Host wake: completion_fd() is this ring's epoll fd over the host's own doorbell eventfd
//     (edge: a drain under a watch that fires on every write never reads it; a step whose
//     drain resets nothing, pool::poll, puts the edge it took back), each child's `answer`
//     eventfd and pidfd (edge), and the starter's eventfd for this ring (level). The host
//     never reads or writes a child's `answer` eventfd, so the child can only make it fire:
//     each edge is counted, and a child whose edges outnumber its answers by more than
//     `spare_rings` is killed as a broken protocol (a spinning child costs its host at most
//     that many wakes).
//   No lost wake (answers): the child's eventfd write comes after its release store of
//     answer_seq; every step() reads the oldest call's answer_seq of every busy child
//     (acquire), whatever event woke it. Either the step's read sees the answer, or the
//     write comes after the step's epoll_wait consumed the earlier events, and the new edge
//     makes completion_fd readable again. Deaths the same way: a pidfd turns readable once,
//     the edge is kept in `dead` until handled, and the answers the child wrote before its
//     death are taken first.
//   No lost wake (requests): slot_bell.hpp's Dekker pair of fences; the child re-checks the
//     next lane after each answer, so a call queued behind never needs one.
// Call states: the oldest call in a child is running (queued -> running when it became the
//   oldest); the ones behind it stay queued, so the host may cancel them or fail them at
//   their deadline (host_state). The next step finds such a call abandoned, hands the record
//   back and takes it back from its lane (claim). A call past its deadline before it was
//   sent is never sent.
// Only the call a child was running fails with it: at a death, a kill at a limit or a
//   broken protocol, the calls behind it were never started (the child serves in turn and
//   claims before it runs) and go back to the head of the FIFO, each at most once
//   (process_job::resent; the second time it fails). A call waiting behind a slow one is
//   taken back (claim) and sent to an idle child (child_choice.hpp's moves).
// Lent children (pool_options::lend_after, max_lent_workers; the thread pool's lent workers
//   are src/lent_workers.cpp): when every child of the ring (and every lent one) has run its
//   oldest call for lend_after and calls wait (in the FIFO, or behind a running call in a
//   lane, where a move takes them back), the ring lends one more child: a lent slot, beyond
//   the `children` slots, gets a start from a worker box of its own (spare_child off: a lent
//   child is started and sandboxed like any other, with no spare behind it). At most
//   effective_lent_limit() lent slots per ring, one lent at a time (none while a child is
//   starting). The step takes the lent child from its box as it is up; the FIFO and the
//   moves then treat it as any other child (child_choice.hpp: a lent slot not lent now is
//   vacant, skipped). The held calls run on. A lent child idle for lend_after with nothing in
//   the FIFO is retired: killed and reaped between calls, its slot vacant (the box stays,
//   childless, for the crash loop of the next lend). A lent child's start that fails retires
//   its slot and fails no call. Its calls meet their limits like any other (a stuck one
//   fails alone; the box then starts a replacement, retired in turn once idle). Wake:
//   next_limit() names the lend moment (the latest oldest_since + lend_after over the
//   children, while calls wait and a slot is vacant) and each idle lent child's retirement,
//   so a host asleep on its timer lends and retires; with no lent child and no call waiting
//   nothing is timed. Counted in the host's counters (pool_stats::lent_workers_*).
#pragma once

#include <sys/epoll.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "knit/call.hpp"
#include "knit/options.hpp"
#include "knit/process.hpp"
#include "process/answer_check.hpp"
#include "process/call_nonce.hpp"
#include "process/child_choice.hpp"
#include "process/spawn.hpp"
#include "process/starter.hpp"
#include "process/unique_fd.hpp"

namespace knit::detail {

struct host_counters;  // pool_shared.hpp

// Test hooks: points in the protocol where a test may stop one side (tests/process).
enum class ring_point {
  host_publishing_request,  // the request is in lane's arena, its request_seq not yet stored
  host_read_answers,        // a step found a busy child with no answer yet in `lane`, the
                            // oldest call's (the host may sleep next)
  host_killing_child,       // a step is about to kill a child whose oldest call (in `lane`)
                            // ran past its deadline or stuck limit
};
using ring_hook = void (*)(ring_point, region_header&, lane_words& lane);
void set_ring_hook(ring_hook hook) noexcept;

class process_ring {
 public:
  // Null when no process task is registered (a program that makes no process call keeps
  // the doorbell itself as its hosts' completion_fd). `bell_fd`: the host's own doorbell
  // eventfd; `children`: how many children this host calls (the pool's worker threads);
  // `pool`: the pool's options (its process options, and its identity for the children
  // knit::process_workers started for it, and its lending); `counters`: the host's, for
  // the running calls whose child this ring kills at their stuck limit (ring_calls_stuck)
  // and the children it lends and retires (ring_lent_started, ring_lent_retired).
  // `cpus`: the mask of the thread that built the pool, which its children run with.
  static std::unique_ptr<process_ring> make_if_tasks(int bell_fd, unsigned children,
                                                     const pool_options& pool,
                                                     const cpu_set_t& cpus,
                                                     host_counters& counters);
  process_ring(int bell_fd, unsigned children, const pool_options& pool, const cpu_set_t& cpus,
               host_counters& counters);
  ~process_ring();
  process_ring(const process_ring&) = delete;
  process_ring& operator=(const process_ring&) = delete;

  // The host's completion_fd().
  int fd() const noexcept { return epoll_.get(); }
  // Takes call `c` (state queued, counted in the host's out_): sent now if a child has a
  // free lane, else queued here. Never fails.
  void accept(call_base* c, std::shared_ptr<process_job> job);
  // One non-blocking round: events, answers, deaths, limits, moves, new children, sends.
  // Returns the records that are finished (run, or abandoned before they were sent): the
  // host hands each to its drain (valid until the next step).
  const std::vector<call_base*>& step();
  // Whether the last step() found the host's doorbell written since the step before, or did
  // not look (then the doorbell must be read as without a ring).
  bool bell_rang() const noexcept { return bell_rang_; }
  // For a step whose drain resets nothing (pool::poll): the doorbell's edge the step took
  // out of the set (edge-triggered) goes back in, so the set is left as it was found. Else
  // a wait on completion_fd() after it would sleep through results: the workers, still
  // signalled, write no more. One epoll_ctl, only when the step took an edge.
  void put_back_bell() {
    if (bell_edge_taken_) requeue_bell();
  }
  // When a child's oldest call's deadline or stuck limit comes, or the lend moment, or an
  // idle lent child's retirement (the host's next_deadline).
  std::optional<std::chrono::steady_clock::time_point> next_limit() const noexcept;
  // Shutdown past its deadline: kills every child with a call, fails the calls they were
  // running with errc::cancelled (those behind, abandoned by then, are handed back).
  // Returns how many it failed; the records come back from the next step().
  std::size_t give_up();
  // Calls this ring holds (queued or running).
  std::size_t held() const noexcept { return queue_.size() + in_children_; }
  // The host's records among them (a call handed back may stay in its lane, no longer the
  // host's): not waiting for a worker thread (the host's thread-mode lending ignores them).
  std::size_t records() const noexcept;

  // Edges of a child's answer eventfd beyond its answers that it may cost its host: one
  // for the handshake's ring, one for an answer taken by a step another event woke.
  static constexpr std::uint64_t spare_rings = 4;

 private:
  void requeue_bell();  // put_back_bell's epoll_ctl
  using steady = std::chrono::steady_clock;
  // A call in a child's lane.
  struct flight {
    call_base* call;  // null once handed back or taken back (it may come back cancelled)
    std::shared_ptr<process_job> job;
    std::uint64_t seq;  // its nonce
    unsigned lane;
    bool taken_back = false;  // the host's claim landed: the child answers it `cancelled`
    bool moved = false;       // taken back to go to another child (not a withdrawal)
  };
  // One of the host's children: its worker_box (replacements, spare, crash loop), the child
  // now serving its calls, and the calls in that child's lanes.
  struct ring_child {
    std::shared_ptr<worker_box> box;
    std::optional<child_process> child;
    bool dead = false;           // its pidfd turned readable (an edge, kept until handled)
    std::deque<flight> flights;  // the calls in the child, oldest (running) first
    unsigned next_lane = 0;      // the lane of the next call sent (0 for a new child)
    std::array<std::uint64_t, region_max_lanes> lane_answered{};  // answer_seq last taken
    steady::time_point oldest_since{};                            // when the oldest began running
    steady::time_point stuck_at = steady::time_point::max();      // the oldest call's limit
    // When the oldest call must have begun (its claim, lane_words::claim), else the child is
    // hung; max() once seen begun.
    steady::time_point begin_by = steady::time_point::max();
    std::uint64_t rings = 0;    // edges of its answer eventfd
    std::uint64_t answers = 0;  // answers taken from it
    // A lent slot (index >= children_) only: lent now (its child up or starting), and since
    // when its child has been idle (epoch: not seen idle since its last call).
    bool lent = false;
    steady::time_point idle_since{};
  };
  struct queued {
    call_base* call;
    std::shared_ptr<process_job> job;
    // Already in state running: the oldest call of a child that died before it started it
    // (end_dead). Like every call sent again, it goes only to an idle child, where it is the
    // oldest again and runs alone.
    bool running = false;
  };
  enum class taken { all, broken, out_of_memory };

  // process_ring.cpp: the ring.
  void claim_boxes();
  void watch(unsigned i);
  void unwatch(ring_child& c) noexcept;
  ring_child* new_child(queued& q, bool& failed);
  bool send(ring_child& c, queued& q, steady::time_point now);
  void send_queued();
  void move_waiting();
  taken take_answers(ring_child& c, steady::time_point now, answer_verdict& verdict);
  void next_in_child(ring_child& c, steady::time_point now);
  bool take_back(ring_child& c, flight& f);
  void withdraw_abandoned(ring_child& c);
  void complete(call_base* call, process_job& job, std::exception_ptr error, std::string answer);
  void fail_unsent(call_base* call, process_job& job, std::exception_ptr error,
                   bool running = false);
  std::string who(const ring_child& c, std::string_view task) const;
  std::vector<child_view>& views(steady::time_point now);
  void install(unsigned k, child_process child);
  // process_ring_lend.cpp: lent children.
  bool in_use(unsigned k) const noexcept { return k < children_ || kids_[k].lent; }
  bool calls_wait() const noexcept;
  std::optional<steady::time_point> lend_due() const noexcept;
  std::optional<steady::time_point> lend_at() const noexcept;
  void lend_if_starved(steady::time_point now);
  void take_lent();
  void retire_lent(ring_child& c);
  void retire_idle_lent(steady::time_point now);
  // process_ring_ends.cpp: deaths, limits, broken protocols, the end.
  void check_child(ring_child& c, steady::time_point now, bool clock_read);
  void end_flights(ring_child& c, std::exception_ptr oldest, bool oldest_unstarted = false);
  void end_broken(ring_child& c, const std::string& why);
  void end_dead(ring_child& c);
  void end_past_limit(ring_child& c, steady::time_point now, answer_verdict& verdict);
  bool end_if_hung(ring_child& c, steady::time_point now);
  std::string stop_child(ring_child& c, bool kill);
  std::string end_idle_child(ring_child& c, bool kill);
  static bool reaped_already(ring_child& c);
  static bool started(ring_child& c, const flight& f);

  const process_options options_;
  const void* const pool_key_;  // the pool's identity (process_workers' children)
  const cpu_set_t cpus_;        // the pool's building thread's mask: its children's
  const unsigned children_;
  const unsigned lent_limit_;           // pool_options::effective_lent_limit()
  const steady::duration lend_after_;   // pool_options::lend_after
  const process_options lent_options_;  // options_, spare_child off
  unsigned lent_now_ = 0;               // lent slots in use
  unique_fd epoll_;
  unique_fd starts_;  // the starter writes it when a box of ours has news
  std::vector<ring_child> kids_;
  std::vector<child_view> views_;
  std::deque<queued> queue_;
  std::size_t in_children_ = 0;  // flights over every child
  unsigned next_ = 0;
  call_nonce nonces_;
  std::vector<call_base*> finished_;  // finished since the last step (give_up adds too)
  std::vector<call_base*> handed_;    // what the last step returned
  std::vector<epoll_event> events_;
  bool bell_rang_ = true;
  bool bell_edge_taken_ = false;  // the last step's epoll_wait reported the doorbell
  const int bell_fd_;             // the host's doorbell (owned by the host)
  host_counters& host_counters_;
};

}  // namespace knit::detail

// process_host_ring: a pool host's own children, called with no pool worker thread between
// (docs/process-workers.md, "The host ring"). One per host_state when
// process_options::host_ring is on; every step runs on that host's thread, never blocks.

//
// Protocol (host h <-> each of its children c; the child's side is child_loop.cpp, the words
// and the lanes shared_region.hpp's, version 4)
//   Up to `lanes` calls (process_options::lanes, the child's mapping's) in one child at once,
//   in its lanes in turn: the oldest runs, the ones behind it wait in the mapping, and the
//   child starts the next the moment it has answered one, without waiting for this host's
//   next step (which a loop at saturation reaches only after its batch of socket events).
//   Beyond that a call waits in this ring's FIFO in host memory, and is bound to a child
//   only when one has a free lane: an idle child first, else the one with the fewest calls
//   (late binding: a slow call holds at most lanes - 1 others behind it).
//   Words (region_header, lane_words), writer -> partner:
//     lane: task_index, request_bytes, request_seq   host h -> child (release on request_seq)
//     lane: answer_status, answer_bytes, answer_seq  child -> host h (release on answer_seq)
//     child_sleeping   child -> host h: read after host h's fence, before it rings `request`
//     host_sleeping    host h -> child: set to 1 once, when the ring takes the child, before
//                      its first request; the child reads it after its fence, before it
//                      rings `answer` (so it always rings: the host never spins)
//     sandbox_syscall  child's SIGSYS handler -> host h, read once after the child's death
//   Every word host h reads is read once (read_answer_words) and checked (check_answer):
//   a sequence other than the call's, a status out of range, a length over the arena is
//   a broken protocol: the child is killed and every call in it fails (worker_crashed),
//   none sent again: a task gone wild may have written over any lane (an answer not yet
//   taken), or been the call behind itself.
//   Send (host h, lane k = the child's next in turn, free: its last answer taken): copy the
//     request into lane k's arena, task_index, request_bytes, request_seq (release), then
//     ring_if_sleeping(child_sleeping, request): slot_bell.hpp's ringer.
//   Answer (child): lane words, answer_seq (release), ring_if_sleeping(host_sleeping,
//     answer): host_sleeping is 1, so it writes `answer`.
//   Host wake: completion_fd() is this ring's epoll fd over the host's own doorbell eventfd
//     (level), each child's `answer` eventfd and pidfd (edge), and the starter's eventfd for
//     this ring (level: a replacement child or a failed start is in a box). A sandboxed
//     child receives no fd after its spawn, so the host's own eventfd cannot be handed to
//     it; the epoll fd makes one fd of them for the host's loop, as before.
//   No lost wake (answers): the child's eventfd write comes after its release store of
//     answer_seq; every step() reads the oldest call's answer_seq of every busy child
//     (acquire), and on to the next call each time it finds one, whatever event woke it.
//     Either the step's read sees the answer, or the write comes after the step's epoll_wait
//     consumed the earlier events, and the new edge makes completion_fd readable again, so
//     the loop runs another step. Deaths the same way: a pidfd turns readable once, the edge
//     is kept in the seat (dead) until handled, and the answers the child wrote before its
//     death are taken first (the death's edge was seen before they were read).
//   No lost wake (requests): slot_bell.hpp's Dekker pair of fences, unchanged; the child
//     re-checks the next lane after each answer, so a call queued behind never needs one.
//   A child that scribbles host_sleeping (or never rings) stalls only its own calls, which
//   their deadlines or stuck limits bound (the kill below); other children are untouched.
// Call states: the oldest call in a child is running (moved from queued when it was sent to
//   an idle child, or when the call before it was answered); the ones behind it stay queued,
//   so the host may still cancel them or fail them at their deadline (host_state), as any
//   queued call. The next step finds it abandoned, hands the record back and sets its lane's
//   cancel_seq, so a child that has not started it answers it `cancelled` without running it
//   (counted calls_withdrawn); one that has runs it, and the answer is dropped. Its deadline
//   still bounds the child. A call past its deadline before it was sent is never sent.
// Limits, each step: the oldest call past its deadline or stuck limit (counted from when it
//   became the oldest) has its child killed (SIGKILL through the pidfd, reaped: it is dead
//   at once), counted `killed`, replaced at once by the starter, and fails with timed_out /
//   stuck. Should the child have answered it just before the kill, that answer is taken, and
//   the call behind it, which may then have been running, fails (worker_crashed): never run
//   twice.
// A death (or a kill, or a task over the memory limit) fails the call the child was running
//   (worker_crashed, sandbox_violation naming the system call, memory_limit); the calls
//   behind it were never started (the child answers before it moves on) and go back to the
//   head of the FIFO, to the next child with a free lane, the replacement included. An idle
//   child's death frees its fds and mapping at once (counted as a crash once, with the
//   starter).
#pragma once

#include <sys/epoll.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "knit/call.hpp"
#include "knit/process.hpp"
#include "process/answer_check.hpp"
#include "process/spawn.hpp"
#include "process/starter.hpp"
#include "process/unique_fd.hpp"

namespace knit::detail {

struct single_writer_counter;  // pool_shared.hpp

// The job submit_process offered on this thread, taken (and the offer withdrawn).
std::shared_ptr<process_job> take_offered_process_job() noexcept;

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

class process_host_ring {
 public:
  // Null unless process_options::host_ring (KNIT_PROCESS_HOST_RING=0|1 decides instead)
  // and some process task is registered. `bell_fd`: the
  // host's own doorbell eventfd; `children`: how many children this host calls (the
  // pool's worker threads); `calls_stuck`: the host's counter of the running calls whose
  // child this ring kills for their stuck limit (bumped on the host's thread).
  static std::unique_ptr<process_host_ring> make_if_enabled(int bell_fd, unsigned children,
                                                            single_writer_counter& calls_stuck);
  process_host_ring(int bell_fd, unsigned children, process_options options,
                    single_writer_counter& calls_stuck);
  ~process_host_ring();
  process_host_ring(const process_host_ring&) = delete;
  process_host_ring& operator=(const process_host_ring&) = delete;

  // The host's completion_fd().
  int fd() const noexcept { return epoll_.get(); }
  // Takes call `c` (state queued, counted in the host's out_): sent now if a child has a
  // free lane, else queued here. Never fails.
  void accept(call_base* c, std::shared_ptr<process_job> job);
  // One non-blocking round: events, answers, deaths, limits, new children, sends. Returns
  // the records that are finished (run, or abandoned before they were sent): the host
  // hands each to its drain (valid until the next step).
  const std::vector<call_base*>& step();
  // Whether the last step() found the host's doorbell readable, or did not look (then the
  // doorbell must be read as without a ring).
  bool bell_rang() const noexcept { return bell_rang_; }
  // When a child's oldest call's deadline or stuck limit comes (the host's next_deadline).
  std::optional<std::chrono::steady_clock::time_point> next_limit() const noexcept;
  // Shutdown past its deadline: kills every child with a call, fails the calls they were
  // running with errc::cancelled (those behind, abandoned by then, are handed back).
  // Returns how many it failed; the records come back from the next step().
  std::size_t give_up();
  // Calls this ring holds (queued or running).
  std::size_t held() const noexcept { return queue_.size() + in_children_; }

 private:
  using steady = std::chrono::steady_clock;
  // A call in a child's lane.
  struct flight {
    call_base* call;  // null once handed back (abandoned while it waited in the lane)
    std::shared_ptr<process_job> job;
    std::uint64_t seq;
    unsigned lane;
    bool withdrawn = false;  // its lane's cancel_seq was set (call null): may come back cancelled
  };
  struct seat {
    std::shared_ptr<worker_box> box;
    std::optional<child_process> child;
    std::uint64_t seq = 0;       // the last request sent (over every child of the seat)
    bool dead = false;           // its pidfd turned readable (an edge, kept until handled)
    std::deque<flight> flights;  // the calls in the child, oldest (running) first
    unsigned next_lane = 0;      // the lane of the next call sent (0 for a new child)
    std::array<std::uint64_t, region_max_lanes> lane_answered{};  // answer_seq last taken
    steady::time_point stuck_at = steady::time_point::max();      // the oldest call's limit
  };
  struct queued {
    call_base* call;
    std::shared_ptr<process_job> job;
  };
  enum class taken { all, broken, out_of_memory };

  void claim_boxes();
  void watch(unsigned s);
  void unwatch(seat& s) noexcept;
  seat* idle_seat();
  seat* new_child_seat(queued& q, bool& failed);
  seat* least_busy_seat();
  bool send(seat& s, call_base* c, std::shared_ptr<process_job>& job);
  void send_queued();
  void check_seat(seat& s, steady::time_point now, bool clock_read);
  taken take_answers(seat& s, steady::time_point now, answer_verdict& verdict);
  void next_in_child(seat& s, steady::time_point now);
  void withdraw(seat& s, flight& f);
  void withdraw_abandoned(seat& s);
  void complete(call_base* c, process_job& job, std::exception_ptr error, std::string answer);
  void fail_unsent(call_base* c, process_job& job, std::exception_ptr error);
  void end_flights(seat& s, std::exception_ptr oldest, std::exception_ptr behind = nullptr);
  std::string who(const seat& s, std::string_view task) const;
  std::string stop_child(seat& s, bool kill);
  std::string end_seat_child(seat& s, bool kill);
  static bool reaped_already(seat& s);

  const process_options options_;
  const unsigned children_;
  unique_fd epoll_;
  unique_fd starts_;  // the starter writes it when a box of ours has news
  std::vector<seat> seats_;
  std::deque<queued> queue_;
  std::size_t in_children_ = 0;  // flights over every seat
  unsigned next_ = 0;
  std::vector<call_base*> finished_;  // finished since the last step (give_up adds too)
  std::vector<call_base*> handed_;    // what the last step returned
  std::vector<epoll_event> events_;
  bool bell_rang_ = true;
  single_writer_counter& calls_stuck_;
};

}  // namespace knit::detail

// process_host_ring: a pool host's own children, called with no pool worker thread between
// (docs/process-workers.md, "The host ring"). One per host_state when
// process_options::host_ring is on; every step runs on that host's thread, never blocks.
//
// Protocol (host h <-> each of its children c; the child's side is child_loop.cpp, unchanged:
// shared_region.hpp's version 3 slot, one call at a time)
//   Simplification of the design (R = 1): a call enters a child's slot only when that child
//   is idle; until then it waits in this ring's FIFO in host memory (late binding, as the
//   design's "fewer than two outstanding", less the one queued in the mapping). So the
//   slot's words and the child's loop are the ones the proxy path uses, and the only new
//   shared word use is the host_sleeping word held at 1 (below).
//   Words (region_header), writer -> partner:
//     task_index, request_bytes, request_seq  host h -> child (release on request_seq)
//     answer_status, answer_bytes, answer_seq  child -> host h (release on answer_seq)
//     child_sleeping   child -> host h: read after host h's fence, before it rings `request`
//     host_sleeping    host h -> child: set to 1 once, when the ring takes the child, before
//                      its first request; the child reads it after its fence, before it
//                      rings `answer` (so it always rings: the host never spins)
//     sandbox_syscall  child's SIGSYS handler -> host h, read once after the child's death
//   Every word host h reads is read once (read_answer_words) and checked (check_answer):
//   a sequence other than the request's, a status out of range, a length over the arena is
//   a broken protocol: the child is killed and its running call fails (worker_crashed).
//   Send (host h): copy the request into the arena, task_index, request_bytes, request_seq
//     (release), then ring_if_sleeping(child_sleeping, request): slot_bell.hpp's ringer.
//   Answer (child): answer words, answer_seq (release), ring_if_sleeping(host_sleeping,
//     answer): host_sleeping is 1, so it writes `answer`.
//   Host wake: completion_fd() is this ring's epoll fd over the host's own doorbell eventfd
//     (level), each child's `answer` eventfd and pidfd (edge), and the starter's eventfd for
//     this ring (level: a replacement child or a failed start is in a box). A sandboxed
//     child receives no fd after its spawn, so the host's own eventfd cannot be handed to
//     it; the epoll fd makes one fd of them for the host's loop, as before.
//   No lost wake (answers): the child's eventfd write comes after its release store of
//     answer_seq; every step() reads answer_seq of every busy child (acquire), whatever
//     event woke it. Either the step's read sees the answer, or the write comes after the
//     step's epoll_wait consumed the earlier events, and the new edge makes completion_fd
//     readable again, so the loop runs another step. Deaths the same way: a pidfd turns
//     readable once, the edge is kept in the seat (dead) until handled, and an answer read
//     before the death is handled wins (it was written before it).
//   No lost wake (requests): slot_bell.hpp's Dekker pair of fences, unchanged.
//   A child that scribbles host_sleeping (or never rings) stalls only its own call, which
//   its deadline or stuck limit bounds (the kill below); other children are untouched.
// Limits, each step: a running call past its deadline or stuck limit (counted from the
//   send) has its child killed (SIGKILL through the pidfd, reaped: it is dead at once),
//   counted `killed`, replaced at once by the starter, and fails with timed_out / stuck.
//   A call cancelled or past its deadline while in the FIFO (state abandoned) is never sent.
// A death during a call fails that call (worker_crashed, sandbox_violation naming the
//   system call); an idle child's death frees its fds and mapping at once (counted as a
//   crash once, with the starter). Calls in the FIFO go to the next idle child, the
//   replacement included.
#pragma once

#include <sys/epoll.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "knit/call.hpp"
#include "knit/process.hpp"
#include "process/spawn.hpp"
#include "process/starter.hpp"
#include "process/unique_fd.hpp"

namespace knit::detail {

// The job submit_process offered on this thread, taken (and the offer withdrawn).
std::shared_ptr<process_job> take_offered_process_job() noexcept;

// Test hooks: points in the protocol where a test may stop one side (tests/process).
enum class ring_point {
  host_publishing_request,  // the request is in the arena, request_seq not yet stored
  host_read_answers,        // a step found a busy child with no answer yet (the host may
                            // sleep next)
};
using ring_hook = void (*)(ring_point, region_header&);
void set_ring_hook(ring_hook hook) noexcept;

class process_host_ring {
 public:
  // Null unless process_options::host_ring (or KNIT_PROCESS_HOST_RING=1). `bell_fd`: the
  // host's own doorbell eventfd; `children`: how many children this host calls (the
  // pool's worker threads).
  static std::unique_ptr<process_host_ring> make_if_enabled(int bell_fd, unsigned children);
  process_host_ring(int bell_fd, unsigned children, process_options options);
  ~process_host_ring();
  process_host_ring(const process_host_ring&) = delete;
  process_host_ring& operator=(const process_host_ring&) = delete;

  // The host's completion_fd().
  int fd() const noexcept { return epoll_.get(); }
  // Takes call `c` (state queued, counted in the host's out_): sent now if a child is idle,
  // else queued here. Never fails.
  void accept(call_base* c, std::shared_ptr<process_job> job);
  // One non-blocking round: events, answers, deaths, limits, new children, sends. Returns
  // the records that are finished (run, or abandoned before they were sent): the host
  // hands each to its drain (valid until the next step).
  const std::vector<call_base*>& step();
  // When a running call's deadline or stuck limit comes (the host's next_deadline).
  std::optional<std::chrono::steady_clock::time_point> next_limit() const noexcept;
  // Shutdown past its deadline: kills every child with a call, fails those calls with
  // errc::cancelled. Returns how many; the records come back from the next step().
  std::size_t give_up();
  // Calls this ring holds (queued or running).
  std::size_t held() const noexcept { return queue_.size() + running_; }

 private:
  struct seat {
    std::shared_ptr<worker_box> box;
    std::optional<child_process> child;
    std::uint64_t seq = 0;           // the last request sent (over every child of the seat)
    std::uint64_t answered_seq = 0;  // answer_seq as last taken (0: a new child)
    bool dead = false;               // its pidfd turned readable (an edge, kept until handled)
    call_base* call = nullptr;       // the running call, or null (idle)
    std::shared_ptr<process_job> job;
    std::chrono::steady_clock::time_point stuck_at = std::chrono::steady_clock::time_point::max();
  };
  struct queued {
    call_base* call;
    std::shared_ptr<process_job> job;
  };

  void claim_boxes();
  void take_children();
  void watch(unsigned s);
  void unwatch(seat& s) noexcept;
  bool send(seat& s, call_base* c, std::shared_ptr<process_job>& job);
  void check_seat(seat& s, std::chrono::steady_clock::time_point now, bool clock_read);
  void finish(seat& s, std::exception_ptr error, std::string answer);
  std::string who(const seat& s, std::string_view task) const;
  std::string end_seat_child(seat& s, bool kill);
  void send_queued();
  static bool reaped_already(seat& s);

  const process_options options_;
  const unsigned children_;
  unique_fd epoll_;
  unique_fd starts_;  // the starter writes it when a box of ours has news
  std::vector<seat> seats_;
  std::deque<queued> queue_;
  std::size_t running_ = 0;
  unsigned next_ = 0;
  std::vector<call_base*> finished_;  // finished since the last step (give_up adds too)
  std::vector<call_base*> handed_;    // what the last step returned
  std::vector<epoll_event> events_;
};

}  // namespace knit::detail

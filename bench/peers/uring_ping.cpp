// uring-ping: the cheapest io_uring HTTP/1.1 responder we know how to write, as a peer in
// bench/tools/syscalls_per_request.sh: what an io_uring event loop costs per request on this
// machine with no framework around it (issue 35 asks whether an io_uring path for knit-server
// pays here before one is built). It is a measuring instrument, not a server: one thread, GET
// only, no request bodies, no timeouts, no limits but the buffer size below.
//
// Spec.
//   - One io_uring, set up with IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN
//     (completions are run when this thread waits, not by interrupting it: Linux 6.1+), and
//     without them where the kernel refuses them (said on stderr).
//   - One multishot accept on the listening socket; per connection one multishot receive into
//     a ring of provided buffers (kBuffers x kBufferBytes, group 0), re-armed when the kernel
//     ends it (no IORING_CQE_F_MORE) and the connection is still open.
//   - Each receive's bytes are appended to the connection's input; every whole head in it
//     (up to CRLF CRLF) is answered in order: GET /ping with a JSON body the size of
//     knit-server's and nginx's, GET /plaintext with TechEmpower's "Hello, World!", anything
//     else 404. The answers of one receive leave in one send; while a send is in flight, new
//     answers wait in the connection's second buffer and leave when it completes (responses
//     stay in request order).
//   - The loop: io_uring_submit_and_wait(1) (one system call submits what the last turn
//     queued and waits), then every completion in the CQ, then the next turn. A connection is
//     closed (close(2)) when its receive ends with 0 or an error and no send is in flight.
//   - SIGINT/SIGTERM end the loop (the wait returns -EINTR).
//   Modes (the third argument), to price the designs knit-server could take:
//     ring  (default) as above: the thread waits in the ring.
//     plain a ring without SINGLE_ISSUER | DEFER_TASKRUN: completions are run by task work
//           that interrupts the thread.
//     hop   as an event loop that keeps its epoll set (Asio's) and adds a ring would: the
//           ring's eventfd (io_uring_register_eventfd: signalled when deferred completions
//           wait) sits in an epoll set (edge-triggered, never read); each turn submits and
//           runs the deferred work (io_uring_submit_and_get_events) and, when that found no
//           completion, waits in epoll_wait and re-arms the eventfd with epoll_ctl(MOD), as
//           Asio 1.81's async_wait does each time.
//     loop  the other way round: the thread waits in the ring, and an epoll set (standing in
//           for Asio's, with one eventfd in it that nothing signals, as Asio's interrupter
//           is quiet while only the loop's thread posts) is watched by a multishot
//           IORING_OP_POLL_ADD on the epoll fd; each turn also runs epoll_wait(…, 0) once, as
//           io_context::poll() runs Asio's reactor once per call.
//     skip  ring, with each send's success unreported (IOSQE_CQE_SKIP_SUCCESS, MSG_WAITALL so
//           that a short send is a failure the kernel reports): the wait is not ended by the
//           send's own completion, the price of one io_uring_enter per response. A measuring
//           instrument only: a connection's next receive is taken as proof that its last
//           send is out, true of clients that wait for their answers (wrk, knit-load), not of
//           a server.
//     asio  loop with Asio itself in place of the stand-in: a real io_context (one thread), its
//           reactor's epoll fd watched by the multishot poll (server/loops/reactor_wake.hpp),
//           io_context::poll() once per turn from inside a handler of its run() (so the
//           ring's completions run inside Asio, as knit-server's would), and before each wait
//           arm_reactor_wake, without which another thread's post would not wake the ring.
//           A thread posts to the io_context every 10 ms (as a pool's completions would) and a
//           timer ticks every second; at the end the slowest post's delay is printed (a lost
//           wake would show as a delay as long as the timer's period).
// Usage: uring-ping [PORT] [HOST] [ring|plain|hop|loop|asio|skip]   (default 18435 127.0.0.1 ring)
#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <iterator>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include "loops/reactor_wake.hpp"

namespace {

constexpr unsigned kEntries = 4096;
constexpr unsigned kBuffers = 1024;  // a power of two (the buffer ring's mask)
constexpr unsigned kBufferBytes = 4096;
constexpr int kBufferGroup = 0;
constexpr std::size_t kMaxInput = 64 * 1024;  // a connection sending more unanswered is closed

enum class op : std::uint8_t { accept, recv, send, epoll };

std::uint64_t tag(op kind, int fd) {
  return (static_cast<std::uint64_t>(kind) << 32) | static_cast<std::uint32_t>(fd);
}

struct connection {
  bool open = false;
  bool receiving = false;  // a multishot receive is armed
  bool sending = false;    // `out` is in flight
  std::string in;          // received bytes not yet a whole head
  std::string out;         // the send in flight
  std::string next;        // answers waiting for it
  std::size_t out_sent = 0;
};

volatile std::sig_atomic_t stop_requested = 0;
void on_signal(int) { stop_requested = 1; }

class uring_ping {
 public:
  enum class mode : std::uint8_t { ring, plain, hop, loop, asio, skip };

  uring_ping(int listen_fd, mode m) : listen_fd_(listen_fd), mode_(m) {
    const auto init = [this](unsigned flags) {
      io_uring_params p{};
      p.flags = flags | IORING_SETUP_CQSIZE;
      p.cq_entries = kEntries * 4;
      return io_uring_queue_init_params(kEntries, &ring_, &p);
    };
    const unsigned deferred = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    int rc = init(m == mode::plain ? 0 : deferred);
    if (rc == -EINVAL && m != mode::plain) {
      std::fprintf(stderr, "uring-ping: SINGLE_ISSUER|DEFER_TASKRUN refused, plain ring\n");
      rc = init(0);
    }
    if (rc < 0) die("io_uring_queue_init_params", -rc);
    setup_buffers();
    arm_accept();
    if (m == mode::hop || m == mode::loop) setup_epoll(m == mode::hop);
    if (m == mode::loop) arm_epoll_poll();
    if (m == mode::asio) {
      epoll_ = knit_server::reactor_fd(io_);
      if (epoll_ < 0) die("reactor_wake: not this Asio", ENOTSUP);
      arm_epoll_poll();
    }
  }

  void run() {
    if (mode_ == mode::asio) return run_asio();
    while (!stop_requested) {
      if (mode_ == mode::hop) {
        const int rc = io_uring_submit_and_get_events(&ring_);
        if (rc < 0 && rc != -EINTR) die("io_uring_submit_and_get_events", -rc);
        if (reap() == 0) wait_in_epoll();
        continue;
      }
      const int rc = io_uring_submit_and_wait(&ring_, 1);
      if (rc < 0 && rc != -EINTR && rc != -ETIME) die("io_uring_submit_and_wait", -rc);
      reap();
      if (mode_ == mode::loop) {  // io_context::poll(): Asio's reactor, without waiting
        epoll_event ev{};
        epoll_wait(epoll_, &ev, 1, 0);
      }
    }
  }

 private:
  unsigned reap() {
    refresh_date();
    unsigned head;
    unsigned seen = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      complete(cqe);
    }
    io_uring_cq_advance(&ring_, seen);
    return seen;
  }

  // The epoll set with one eventfd in it; `ring_bell`: the ring signals that eventfd (hop).
  void setup_epoll(bool ring_bell) {
    bell_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    if (bell_ < 0 || epoll_ < 0) die("eventfd/epoll_create1", errno);
    if (ring_bell) {
      if (const int rc = io_uring_register_eventfd(&ring_, bell_); rc < 0) {
        die("io_uring_register_eventfd", -rc);
      }
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLET;
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, bell_, &ev) != 0) die("epoll_ctl", errno);
  }

  void arm_epoll_poll() {
    io_uring_sqe* s = sqe();
    io_uring_prep_poll_multishot(s, epoll_, POLLIN);
    io_uring_sqe_set_data64(s, tag(op::epoll, epoll_));
  }

  void wait_in_epoll() {
    epoll_event ev{};
    const int n = epoll_wait(epoll_, &ev, 1, -1);
    if (n < 0 && errno != EINTR) die("epoll_wait", errno);
    ev.events = EPOLLIN | EPOLLET;
    epoll_ctl(epoll_, EPOLL_CTL_MOD, bell_, &ev);
  }

  // asio: the turns run inside a handler of io_.run(), so that what the ring's completions
  // post stays on this thread's private queue (no interrupt), as in knit-server's loop.
  void run_asio() {
    namespace net = boost::asio;
    auto keep_running = net::make_work_guard(io_);
    net::steady_timer tick(io_);
    std::function<void()> arm_tick = [&] {
      tick.expires_after(std::chrono::seconds(1));
      tick.async_wait([&](boost::system::error_code ec) {
        if (!ec) arm_tick();
      });
    };
    arm_tick();
    std::atomic<bool> done{false};
    std::uint64_t posts = 0;
    std::chrono::steady_clock::duration slowest{};
    std::thread poster([&] {
      while (!done.load(std::memory_order_relaxed)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        net::post(io_, [&, at = std::chrono::steady_clock::now()] {
          ++posts;
          slowest = std::max(slowest, std::chrono::steady_clock::now() - at);
        });
      }
    });
    net::post(io_, [this] {
      while (!stop_requested) {
        knit_server::poll_inside_handler(io_);
        const bool may_wait = knit_server::arm_reactor_wake(io_);
        const int rc =
            may_wait ? io_uring_submit_and_wait(&ring_, 1) : io_uring_submit_and_get_events(&ring_);
        if (rc < 0 && rc != -EINTR && rc != -ETIME) die("io_uring_submit", -rc);
        reap();
      }
      io_.stop();
    });
    io_.run();
    done = true;
    poster.join();
    std::fprintf(
        stderr,
        "uring-ping: asio: %llu posts from another thread, the slowest ran %lld us after it\n",
        static_cast<unsigned long long>(posts),
        static_cast<long long>(
            std::chrono::duration_cast<std::chrono::microseconds>(slowest).count()));
  }

  [[noreturn]] static void die(const char* what, int err) {
    std::fprintf(stderr, "uring-ping: %s: %s\n", what, std::strerror(err));
    std::exit(1);
  }

  io_uring_sqe* sqe() {
    io_uring_sqe* s = io_uring_get_sqe(&ring_);
    if (!s) {  // the SQ is full: submit what is queued and take a slot again
      io_uring_submit(&ring_);
      s = io_uring_get_sqe(&ring_);
      if (!s) die("io_uring_get_sqe", EBUSY);
    }
    return s;
  }

  void setup_buffers() {
    const std::size_t ring_bytes = kBuffers * sizeof(io_uring_buf);
    void* mem =
        mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (mem == MAP_FAILED) die("mmap", errno);
    bufs_ = static_cast<io_uring_buf_ring*>(mem);
    io_uring_buf_ring_init(bufs_);
    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<std::uint64_t>(mem);
    reg.ring_entries = kBuffers;
    reg.bgid = kBufferGroup;
    if (const int rc = io_uring_register_buf_ring(&ring_, &reg, 0); rc < 0) {
      die("io_uring_register_buf_ring", -rc);
    }
    storage_.resize(static_cast<std::size_t>(kBuffers) * kBufferBytes);
    for (unsigned i = 0; i < kBuffers; ++i) give_back(i, i);
    io_uring_buf_ring_advance(bufs_, static_cast<int>(kBuffers));
  }

  void give_back(unsigned bid, unsigned offset) {
    io_uring_buf_ring_add(bufs_, storage_.data() + static_cast<std::size_t>(bid) * kBufferBytes,
                          kBufferBytes, static_cast<unsigned short>(bid),
                          io_uring_buf_ring_mask(kBuffers), static_cast<int>(offset));
  }

  void arm_accept() {
    io_uring_sqe* s = sqe();
    io_uring_prep_multishot_accept(s, listen_fd_, nullptr, nullptr, 0);
    io_uring_sqe_set_data64(s, tag(op::accept, listen_fd_));
  }

  void arm_recv(int fd) {
    io_uring_sqe* s = sqe();
    io_uring_prep_recv_multishot(s, fd, nullptr, 0, 0);
    s->flags |= IOSQE_BUFFER_SELECT;
    s->buf_group = kBufferGroup;
    io_uring_sqe_set_data64(s, tag(op::recv, fd));
    conn(fd).receiving = true;
  }

  void send_out(int fd) {
    connection& c = conn(fd);
    io_uring_sqe* s = sqe();
    if (mode_ == mode::skip) {  // only a failure completes (its completion ends the connection)
      io_uring_prep_send(s, fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_WAITALL);
      s->flags |= IOSQE_CQE_SKIP_SUCCESS;
      io_uring_sqe_set_data64(s, tag(op::send, fd));
      return;
    }
    io_uring_prep_send(s, fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
    io_uring_sqe_set_data64(s, tag(op::send, fd));
    c.sending = true;
  }

  connection& conn(int fd) {
    if (static_cast<std::size_t>(fd) >= conns_.size()) conns_.resize(fd + 1);
    return conns_[fd];
  }

  void complete(const io_uring_cqe* cqe) {
    const auto kind = static_cast<op>(cqe->user_data >> 32);
    const int fd = static_cast<int>(cqe->user_data & 0xffffffffu);
    switch (kind) {
      case op::accept: return on_accept(cqe);
      case op::recv: return on_recv(fd, cqe);
      case op::send: return on_send(fd, cqe->res);
      case op::epoll:
        if (!(cqe->flags & IORING_CQE_F_MORE)) arm_epoll_poll();
        return;
    }
  }

  void on_accept(const io_uring_cqe* cqe) {
    if (cqe->res >= 0) {
      const int fd = cqe->res;
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      conn(fd) = connection{};
      conn(fd).open = true;
      arm_recv(fd);
    }
    if (!(cqe->flags & IORING_CQE_F_MORE)) arm_accept();
  }

  void on_recv(int fd, const io_uring_cqe* cqe) {
    connection& c = conn(fd);
    const bool more = (cqe->flags & IORING_CQE_F_MORE) != 0;
    if (!more) c.receiving = false;
    if (cqe->res > 0) {
      const unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
      if (c.open) {  // ending: what still arrives is dropped
        c.in.append(storage_.data() + static_cast<std::size_t>(bid) * kBufferBytes,
                    static_cast<std::size_t>(cqe->res));
      }
      give_back(bid, 0);
      io_uring_buf_ring_advance(bufs_, 1);
      if (!c.open) {
        if (!more) finish(fd);
        return;
      }
      answer_heads(fd, c);
      if (c.in.size() > kMaxInput) return finish(fd);
      if (!more && c.open) arm_recv(fd);
      return;
    }
    if (cqe->res == -ENOBUFS && c.open) {  // every buffer in use: ask again
      if (!more) arm_recv(fd);
      return;
    }
    finish(fd);  // end of stream or an error
  }

  void answer_heads(int fd, connection& c) {
    std::size_t start = 0;
    std::string& dst = c.sending ? c.next : c.out;
    if (mode_ == mode::skip) c.out.clear();  // this receive says the last send is out
    const std::size_t before = dst.size();
    for (;;) {
      const std::size_t end = c.in.find("\r\n\r\n", start);
      if (end == std::string::npos) break;
      append_answer(dst, std::string_view(c.in).substr(start, end - start));
      start = end + 4;
    }
    c.in.erase(0, start);
    if (!c.sending && dst.size() > before) {
      c.out_sent = 0;
      send_out(fd);
    }
  }

  void append_answer(std::string& dst, std::string_view head) {
    std::string_view type = "application/json";
    std::string_view body;
    std::string_view status = "200 OK";
    if (head.starts_with("GET /ping ")) {
      body = R"({"ok":true,"pong":true,"runtime":"uring","ts":"2026-01-01T00:00:00.000Z"})";
    } else if (head.starts_with("GET /plaintext ")) {
      type = "text/plain";
      body = "Hello, World!";
    } else {
      status = "404 Not Found";
      type = "text/plain";
    }
    dst.append("HTTP/1.1 ").append(status).append("\r\nServer: uring-ping\r\nDate: ");
    dst.append(date_).append("\r\nContent-Type: ").append(type);
    dst.append("\r\nContent-Length: ").append(std::to_string(body.size())).append("\r\n\r\n");
    dst.append(body);
  }

  void on_send(int fd, int res) {
    if (mode_ == mode::skip) return finish(fd);
    connection& c = conn(fd);
    c.sending = false;
    if (res < 0 || !c.open) return finish(fd);
    c.out_sent += static_cast<std::size_t>(res);
    if (c.out_sent < c.out.size()) return send_out(fd);
    c.out.clear();
    c.out_sent = 0;
    if (!c.next.empty()) {
      c.out.swap(c.next);
      send_out(fd);
    }
  }

  // Ends the connection once nothing of it is in flight: a send completes first (its
  // completion calls this again); an armed receive is ended by shutdown(2) and its last
  // completion calls this again; then close(2).
  void finish(int fd) {
    connection& c = conn(fd);
    c.open = false;
    if (c.sending) return;
    if (c.receiving) {
      shutdown(fd, SHUT_RDWR);
      return;
    }
    close(fd);
    c = connection{};
  }

  void refresh_date() {
    const std::time_t now = std::time(nullptr);
    if (now == date_at_) return;
    date_at_ = now;
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    date_ = buf;
  }

  int listen_fd_;
  mode mode_;
  int bell_ = -1;                  // hop, loop: the eventfd in the epoll set (hop: the ring's)
  int epoll_ = -1;                 // hop, loop: the epoll set; asio: its reactor's
  boost::asio::io_context io_{1};  // asio
  io_uring ring_{};
  io_uring_buf_ring* bufs_ = nullptr;
  std::vector<char> storage_;
  std::vector<connection> conns_;
  std::string date_;
  std::time_t date_at_ = 0;
};

int listen_on(const char* host, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
    std::fprintf(stderr, "uring-ping: not an IPv4 address: %s\n", host);
    std::exit(2);
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 4096) != 0) {
    std::fprintf(stderr, "uring-ping: cannot listen on %s:%d: %s\n", host, port,
                 std::strerror(errno));
    std::exit(1);
  }
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  const int port = argc > 1 ? std::atoi(argv[1]) : 18435;
  const char* host = argc > 2 ? argv[2] : "127.0.0.1";
  struct sigaction sa {};
  sa.sa_handler = on_signal;  // no SA_RESTART: the wait returns -EINTR
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // The modes by name; the usage line lists them in this order.
  using mode = uring_ping::mode;
  constexpr std::pair<std::string_view, mode> kModes[] = {
      {"ring", mode::ring}, {"plain", mode::plain}, {"hop", mode::hop},
      {"loop", mode::loop}, {"asio", mode::asio},   {"skip", mode::skip}};
  const std::string_view name = argc > 3 ? argv[3] : "ring";
  const auto* found = std::find_if(std::begin(kModes), std::end(kModes),
                                   [name](const auto& entry) { return entry.first == name; });
  if (found == std::end(kModes)) {
    std::fprintf(stderr, "usage: uring-ping [PORT] [HOST] [ring|plain|hop|loop|asio|skip]\n");
    return 2;
  }
  const mode md = found->second;
  uring_ping server(listen_on(host, port), md);
  std::fprintf(stderr, "uring-ping: listening on %s:%d\n", host, port);
  server.run();
  return 0;
}

// log_writer.hpp: whole lines or none, never blocking, never SIGPIPE, and the inherited fd left as
// it was.
#include "telemetry/log_writer.hpp"  // first: the header must be self-contained

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace knit_server {
namespace {

struct pipe_fds {
  int read = -1;
  int write = -1;
  pipe_fds() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) == 0) {
      read = fds[0];
      write = fds[1];
    }
  }
  ~pipe_fds() {
    if (read >= 0) ::close(read);
    if (write >= 0) ::close(write);
  }
  // Everything in the pipe now (the read end is switched to non-blocking: it is ours alone).
  std::string drain() const {
    ::fcntl(read, F_SETFL, ::fcntl(read, F_GETFL) | O_NONBLOCK);
    std::string all;
    char chunk[4096];
    for (;;) {
      const ssize_t n = ::read(read, chunk, sizeof chunk);
      if (n <= 0) break;
      all.append(chunk, static_cast<std::size_t>(n));
    }
    return all;
  }
};

TEST(log_writer, writes_whole_lines_to_a_pipe) {
  pipe_fds p;
  ASSERT_GE(p.write, 0);
  log_writer out(p.write);
  out.write_line("hello");
  out.write_line("world");
  EXPECT_EQ(p.drain(), "hello\nworld\n");
  EXPECT_EQ(out.dropped(), 0u);
}

TEST(log_writer, leaves_the_inherited_description_blocking) {
  // O_NONBLOCK on a shared pipe would make the other holders' writes fail with EAGAIN.
  pipe_fds p;
  log_writer out(p.write);
  out.write_line("x");
  EXPECT_EQ(::fcntl(p.write, F_GETFL) & O_NONBLOCK, 0);
}

TEST(log_writer, a_full_pipe_drops_and_counts_instead_of_blocking) {
  pipe_fds p;
  log_writer out(p.write);
  // 4,000 lines of 100 bytes: six times a default 64 KiB pipe. A blocking writer would hang
  // here (and the test with it) once the pipe is full.
  const std::string line(99, 'L');
  for (int i = 0; i < 4000; ++i) out.write_line(line);
  EXPECT_GT(out.dropped(), 0u);
  // What did get through is whole lines only.
  const std::string got = p.drain();
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.size() % 100, 0u);
  for (std::size_t at = 0; at < got.size(); at += 100) {
    ASSERT_EQ(got.compare(at, 100, line + "\n"), 0) << "torn line at byte " << at;
  }
  // Room again: the next line goes out.
  const auto dropped = out.dropped();
  out.write_line("after");
  EXPECT_EQ(out.dropped(), dropped);
  EXPECT_EQ(p.drain(), "after\n");
}

TEST(log_writer, a_reader_that_has_gone_is_a_dropped_line) {
  // The server ignores SIGPIPE; so must this process, or EPIPE would arrive as a signal.
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGPIPE, &ignore, &old), 0);
  {
    pipe_fds p;
    log_writer out(p.write);  // reopened while the reader is there
    ::close(p.read);
    p.read = -1;
    out.write_line("nobody reads this");
    EXPECT_EQ(out.dropped(), 1u);
  }
  {
    pipe_fds p;
    ::close(p.read);  // gone before the writer is made: the guarded path
    p.read = -1;
    log_writer out(p.write);
    out.write_line("nor this");
    EXPECT_EQ(out.dropped(), 1u);
  }
  ::sigaction(SIGPIPE, &old, nullptr);
}

TEST(log_writer, writes_to_a_regular_file) {
  char path[] = "/tmp/knit-log-writer-test-XXXXXX";
  const int fd = ::mkostemp(path, O_CLOEXEC);
  ASSERT_GE(fd, 0);
  {
    log_writer out(fd);
    out.write_line("one");
    out.write_line("two");
    EXPECT_EQ(out.dropped(), 0u);
  }
  char buf[32] = {};
  EXPECT_EQ(::pread(fd, buf, sizeof buf - 1, 0), 8);
  EXPECT_STREQ(buf, "one\ntwo\n");
  ::close(fd);
  ::unlink(path);
}

}  // namespace
}  // namespace knit_server

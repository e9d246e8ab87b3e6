// A stand-in for knit-server in driver tests: same environment contract, listening
// line, SIGUSR1 stats line and SIGTERM exit, but no real routes.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

}  // namespace

int main() {
  // FAKE_EXIT_CODE makes the fake behave like a server rejecting its configuration.
  if (const char* code = std::getenv("FAKE_EXIT_CODE")) return std::atoi(code);
  const std::string host = env_or("HOST", "127.0.0.1");
  const int port = std::atoi(env_or("PORT", "3000").c_str());
  const std::string mode = env_or("KNIT_MODE", "pooled");
  const std::string threads_text = env_or("KNIT_THREADS", "1");
  if (threads_text.find_first_not_of("0123456789") != std::string::npos) {
    std::fprintf(stderr, "invalid KNIT_THREADS\n");
    return 2;
  }
  const int threads = std::atoi(threads_text.c_str());
  // KNIT_HOSTS: the stats line lists one entry per host, as knit-server's does; FAKE_REPORT_HOSTS
  // makes it list another count (a server that ignored KNIT_HOSTS), "none" no list at all.
  const std::string hosts_text = env_or("FAKE_REPORT_HOSTS", env_or("KNIT_HOSTS", "").c_str());
  std::string hosts_json;
  if (!hosts_text.empty() && hosts_text != "none") {
    const int hosts = std::atoi(hosts_text.c_str());
    hosts_json = ",\"hosts\":[";
    for (int h = 0; h < hosts; ++h) {
      if (h) hosts_json += ',';
      hosts_json += "{\"requests\":1}";
    }
    hosts_json += "]";
  }

  // Signals are taken synchronously by the main thread; block them before any thread starts.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s, 128) != 0) {
    std::perror("bind/listen");
    return 1;
  }
  // Idle "pool workers", so the OS thread count looks like a pooled server's.
  std::vector<std::thread> workers;
  if (mode == "pooled")
    for (int i = 0; i < threads; ++i) workers.emplace_back([] { ::pause(); });
  std::thread([s] {
    for (;;) {
      int c = ::accept(s, nullptr, nullptr);
      if (c >= 0) ::close(c);
    }
  }).detach();

  if (!std::getenv("FAKE_NO_LISTEN_LINE")) {
    std::printf("listening on http://%s:%d\n", host.c_str(), port);
    std::fflush(stdout);
  }
  long k = 0;
  for (;;) {
    int sig = 0;
    sigwait(&set, &sig);
    // FAKE_IGNORE_TERM: a server that does not stop on SIGTERM (the driver must SIGKILL it).
    if (sig == SIGTERM && std::getenv("FAKE_IGNORE_TERM")) continue;
    if (sig != SIGUSR1) {
      std::fflush(stdout);
      std::_Exit(0);
    }
    ++k;
    if (mode != "pooled") {
      // FAKE_REPORT_MODE: a server that accepted KNIT_MODE but runs another mode.
      const std::string reported = env_or("FAKE_REPORT_MODE", mode.c_str());
      std::printf(
          "knit-stats "
          "{\"mode\":\"%s\",\"requests\":{\"ping\":%ld,\"ssr\":%ld,\"jwt\":%ld},\"pool\":null%s}\n",
          reported.c_str(), k * 100, k * 50, k * 50, hosts_json.c_str());
    } else {
      std::printf(
          "knit-stats {\"mode\":\"pooled\",\"requests\":{\"ping\":%ld,\"ssr\":%ld,\"jwt\":%ld},"
          "\"pool\":{\"threads\":%d,\"totals\":{\"calls_submitted\":%ld,\"calls_completed\":%ld,"
          "\"host_wakes\":%ld,\"completion_batches\":%ld,\"parks\":%ld},\"workers\":[]}%s}\n",
          k * 100, k * 50, k * 50, threads, k * 1000, k * 1000, k * 250, k * 500, k * 10,
          hosts_json.c_str());
    }
    std::fflush(stdout);
  }
}

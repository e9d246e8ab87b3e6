// load_test_server: runs tiny_http_server on a fixed port so wrk and knit-load can be compared.
#include <csignal>
#include <cstdlib>
#include <iostream>

#include "tiny_http_server.hpp"

// SIGUSR1 prints the number of requests answered so far (to check a tool's count);
// SIGINT/SIGTERM print it and exit.
int main(int argc, char** argv) {
  const int port = argc > 1 ? std::atoi(argv[1]) : 18080;
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGUSR1);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  // Blocked before the server thread starts, so only sigwait below sees them.
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  knit_load_test::tiny_http_server server(static_cast<std::uint16_t>(port));
  std::cerr << "load_test_server listening on 127.0.0.1:" << server.port() << std::endl;
  while (true) {
    int sig = 0;
    sigwait(&signals, &sig);
    std::cout << "served " << server.requests_served() << std::endl;
    if (sig != SIGUSR1) return 0;
  }
}

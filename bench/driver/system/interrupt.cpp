// Ctrl-C / SIGTERM for the driver: remember the request so waits end early and the
// server is still stopped by PID, instead of dying with a server left on the port.
#include "driver/system/interrupt.hpp"

#include <signal.h>

#include <atomic>

namespace knit::bench {
namespace {
std::atomic<bool> g_interrupted{false};
void on_signal(int) { g_interrupted.store(true); }
}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
}

bool interrupted() { return g_interrupted.load(); }
void request_interrupt() { g_interrupted.store(true); }

}  // namespace knit::bench

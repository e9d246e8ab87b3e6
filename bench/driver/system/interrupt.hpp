// Ctrl-C / SIGTERM for the driver: remember the request so waits end early and the
// server is still stopped by PID, instead of dying with a server left on the port.
#pragma once

namespace knit::bench {

void install_interrupt_handlers();
bool interrupted();
void request_interrupt();  // for tests

}  // namespace knit::bench

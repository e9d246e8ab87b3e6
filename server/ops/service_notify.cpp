// service_notify: sd_notify(3) when built with libsystemd (KNIT_HAVE_SYSTEMD), nothing
// otherwise. sd_notify itself returns 0 without sending when NOTIFY_SOCKET is unset.
#include "ops/service_notify.hpp"

#if KNIT_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace knit_server {
namespace {

void send(const char* state) noexcept {
#if KNIT_HAVE_SYSTEMD
  // unset_environment = 0: keep NOTIFY_SOCKET, the second message goes to the same socket.
  // The result is ignored: with no manager listening the server must run the same.
  (void)sd_notify(0, state);
#else
  (void)state;
#endif
}

}  // namespace

void notify_ready() noexcept { send("READY=1"); }

void notify_stopping() noexcept { send("STOPPING=1"); }

bool service_notify_built_in() noexcept { return KNIT_HAVE_SYSTEMD != 0; }

}  // namespace knit_server

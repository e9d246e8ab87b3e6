// service_notify: tells systemd (a Type=notify unit) when the server is ready and when it is
// stopping, through sd_notify(3).
//
// Protocol (sd_notify(3), systemd.service(5) Type=notify):
//   - The service manager sets NOTIFY_SOCKET to an AF_UNIX datagram socket (a path, or an
//     abstract name starting with '@') before it starts the process.
//   - notify_ready() sends one datagram "READY=1" once the listener accepts connections:
//     systemd holds back units ordered after this one, and `systemctl start` returns, only
//     then. It is sent after "listening on ..." is printed (main.cpp, step 5).
//   - notify_stopping() sends "STOPPING=1" when the first SIGTERM/SIGINT starts the stop, so
//     the manager shows the unit as deactivating while the requests in progress finish.
//   - NOTIFY_SOCKET unset (or empty): both do nothing. A failed send changes nothing either:
//     the server serves the same with or without a manager listening.
// Built with libsystemd when CMake found it (KNIT_SYSTEMD=AUTO|ON); with KNIT_SYSTEMD=OFF,
// or AUTO without libsystemd, both compile to nothing, and the unit must not be
// Type=notify (cmake/knit-server.service.in chooses).
#pragma once

namespace knit_server {

// READY=1: the listener is listening. Call once, after the "listening on" line.
void notify_ready() noexcept;

// STOPPING=1: the graceful stop has begun. Call once, when the first stop signal is taken.
void notify_stopping() noexcept;

// Whether this build sends anything (false: built without libsystemd).
bool service_notify_built_in() noexcept;

}  // namespace knit_server

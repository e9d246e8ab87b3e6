#!/usr/bin/env bash
# boot_test.sh [dir with the .deb files]: the three Debian packages under a real systemd.
# A Debian 12 root file system (mmdebstrap, minbase + systemd, dbus, curl, procps and the
# packages' own Depends; cached as a tarball in the .deb directory, reused while that list
# is the same) boots with `systemd-nspawn -b` (systemd as the container's PID 1, its own
# network namespace: loopback only, no traffic leaves it), the .debs are installed with apt
# inside it (offline: every dependency is in the image), and then:
#   1. Type=notify: the postinst's start reached active (running); `systemctl restart`
#      returns once READY=1 came and /readyz answers 200 at once; and with READY=1 never
#      sent (a drop-in UnsetEnvironment=NOTIFY_SOCKET, TimeoutStartSec=8, Restart=no: it runs
#      and serves but cannot notify) the start never reaches active: it stays activating,
#      /readyz answering meanwhile, and fails with result timeout. Active means READY=1,
#      not "the process started" nor "it listens".
#   2. /readyz answers "ok" through the container's loopback (the packaged HOST/PORT).
#   3. KNIT_ISOLATION=process in /etc/default/knit-server, restart: the unit's sandboxing
#      (DynamicUser, SystemCallFilter, MemoryDenyWriteExecute, ...) lets the worker
#      processes start, POST /ssr answers 200 and /metrics shows the worker processes.
#   4. `systemctl stop` exits 0 (Result=success, status 0) within TimeoutStopSec.
#   5. `systemctl kill -s SIGKILL` (every process of the unit), then `--kill-whom=main`
#      (the main process only), each after a POST /ssr made the worker process exist: no
#      worker of the killed server is left, Restart=on-failure brings the service back (a
#      new MainPID, NRestarts counted) and POST /ssr runs on a fresh worker process.
#   6. `journalctl -u knit-server` holds the banner ("listening on", "mode: pooled") and
#      the stop line ("knit-server: stopped").
# Prints the timings: root file system (built or reused), boot to a running system, start
# to READY=1, stop. The last lines are a one-line summary. Loopback only; the container
# is powered off and its files removed on every exit path of this script (a SIGKILL of the
# script leaves systemd-nspawn running: kill it by the PID the script started).
#
# Needs root, mmdebstrap and systemd-nspawn (packages mmdebstrap, systemd-container) and a
# Debian mirror reachable by apt for the first mmdebstrap (later runs reuse the tarball).
# nspawn runs with --register=no --keep-unit: the host needs no systemd of its own.
set -euo pipefail
debs=$(readlink -f "${1:-build-package}")
fail() { echo "boot_test: FAIL: $*" >&2; exit 1; }
say() { echo "boot_test: $*"; }
[ "$(id -u)" -eq 0 ] || fail "needs root (mmdebstrap, systemd-nspawn)"
for tool in mmdebstrap systemd-nspawn nsenter dpkg-deb; do
  command -v "$tool" >/dev/null || fail "$tool not on PATH (./knit deps installs mmdebstrap systemd-container)"
done
shopt -s nullglob
packages=("$debs"/*.deb)
[ ${#packages[@]} -eq 3 ] || fail "expected the 3 .deb files in $debs (./knit package), found ${#packages[@]}"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN {printf "%.2f", b - a}'; }

# The image's packages: what boots and what the checks use, plus every package the .debs
# depend on (names only; apt checks the versions when it installs them).
ours=" knit-server libknit-dev $(dpkg-deb -f "$debs"/libknit[0-9]*.deb Package) "
include=(systemd systemd-sysv dbus curl procps ca-certificates)
for deb in "${packages[@]}"; do
  while IFS= read -r dep; do
    [ -z "$dep" ] || [[ "$ours" == *" $dep "* ]] || include+=("$dep")
  done < <(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/:any//; s/ //g')
done
mapfile -t include < <(printf '%s\n' "${include[@]}" | sort -u)
key=$(printf '%s\n' bookworm minbase "${include[@]}" | sha256sum | cut -c1-12)
tarball=$debs/boot-root-bookworm-$key.tar

work=$(mktemp -d "${TMPDIR:-/tmp}/knit-boot.XXXXXX")
root=$work/root
nspawn_pid=
cleanup() {
  if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
    kill -TERM "$nspawn_pid" 2>/dev/null || true  # nspawn halts the container
    for _ in $(seq 1 100); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$nspawn_pid" 2>/dev/null || true   # then nspawn takes the container with it
    wait "$nspawn_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t=$(now)
if [ -s "$tarball" ]; then
  built="reused $(basename "$tarball")"
else
  say "mmdebstrap bookworm minbase + ${include[*]} -> $tarball"
  mmdebstrap --format=tar --variant=minbase --include="$(IFS=,; echo "${include[*]}")" bookworm \
    "$tarball.part" >"$work/mmdebstrap.log" 2>&1 || { cat "$work/mmdebstrap.log" >&2; fail "mmdebstrap"; }
  mv "$tarball.part" "$tarball"
  built="built"
fi
t_rootfs=$(since "$t")
mkdir -p "$root"
t=$(now)
tar -xf "$tarball" -C "$root"
mkdir -p "$root/root/debs"
cp "${packages[@]}" "$root/root/debs/"
t_extract=$(since "$t")
say "root file system: $built in $t_rootfs s, extracted in $t_extract s"

# Boot. --console=pipe: no tty needed; the container's console goes to nspawn.log.
t=$(now)
systemd-nspawn -D "$root" -b --register=no --keep-unit --private-network --console=pipe \
  -M "knit-boot-$$" </dev/null >"$work/nspawn.log" 2>&1 &
nspawn_pid=$!
leader=
for _ in $(seq 1 300); do  # up to 30 s for the container's PID 1
  leader=$(cat "/proc/$nspawn_pid/task/$nspawn_pid/children" 2>/dev/null | awk '{print $1}')
  [ -n "$leader" ] && [ "$(cat "/proc/$leader/comm" 2>/dev/null)" = systemd ] && break
  kill -0 "$nspawn_pid" 2>/dev/null || { cat "$work/nspawn.log" >&2; fail "systemd-nspawn exited"; }
  leader=
  sleep 0.1
done
[ -n "$leader" ] || { cat "$work/nspawn.log" >&2; fail "no systemd in the container after 30 s"; }
# inside CMD...: run in the container (every namespace of its PID 1), with a bound.
inside() { timeout 60 nsenter -t "$leader" -a "$@"; }
state=
for _ in $(seq 1 600); do  # up to 60 s to boot
  state=$(inside systemctl is-system-running 2>/dev/null || true)
  case "$state" in running|degraded) break ;; esac
  sleep 0.1
done
case "$state" in running|degraded) ;; *) fail "the container's systemd is '$state' after 60 s" ;; esac
t_boot=$(since "$t")
say "booted: systemd $state in $t_boot s ($(inside systemctl --version | head -1))"
[ "$state" = running ] || inside systemctl --failed --no-pager || true

# Only loopback in the container: nothing it does can reach another machine.
links=$(inside ls /sys/class/net)
[ "$links" = lo ] || fail "the container has network interfaces besides lo: $links"

# Install with apt (offline: every dependency is in the image). The postinst enables and
# starts the unit (systemd runs: /run/systemd/system exists).
t=$(now)
inside sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q /root/debs/*.deb' \
  >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; fail "apt-get install"; }
t_install=$(since "$t")
installed=$(inside dpkg-query -W -f='${Package} ${Version} ${Status}\n' knit-server libknit-dev 'libknit[0-9]*')
[ "$(grep -c 'install ok installed' <<<"$installed")" = 3 ] || { cat "$work/apt.log" >&2; fail "not installed: $installed"; }
say "installed with apt in $t_install s: $(cut -d' ' -f1,2 <<<"$installed" | paste -sd,)"

show() { inside systemctl show -p "$1" --value knit-server; }
readyz() { inside curl -s --max-time 5 http://127.0.0.1:3000/readyz; }
wait_active() {  # wait_active SECONDS: until the unit is active (running)
  for _ in $(seq 1 $(($1 * 10))); do
    [ "$(show ActiveState)/$(show SubState)" = active/running ] && return 0
    sleep 0.1
  done
  return 1
}

# 1 and 2: the postinst's start, then a restart timed to READY=1.
wait_active 20 || fail "after apt install: $(show ActiveState)/$(show SubState); $(inside systemctl status --no-pager knit-server)"
[ "$(inside systemctl is-enabled knit-server)" = enabled ] || fail "the postinst did not enable the unit"
[ "$(show Type)" = notify ] || fail "Type is $(show Type)"
t=$(now)
inside systemctl restart knit-server || fail "systemctl restart"
t_ready=$(since "$t")
[ "$(show ActiveState)/$(show SubState)" = active/running ] || fail "restart returned with $(show ActiveState)"
got=$(readyz)  # at once, no retry: READY=1 came after the listener was open
[ "$got" = ok ] || fail "/readyz right after systemctl restart returned: '$got'"
say "Type=notify: systemctl restart returned after READY=1 in $t_ready s; /readyz at once: $got"
# READY=1 ignored: the start must stay activating and fail, never reach active.
inside mkdir -p /run/systemd/system/knit-server.service.d
inside sh -c 'printf "[Service]\nUnsetEnvironment=NOTIFY_SOCKET\nTimeoutStartSec=8\nRestart=no\n" >/run/systemd/system/knit-server.service.d/no-notify.conf'
inside systemctl daemon-reload
inside systemctl stop knit-server
inside systemctl start --no-block knit-server
served=
for _ in $(seq 1 60); do  # the server listens while its unit is still activating
  [ "$(show ActiveState)" = activating ] || break
  if [ "$(readyz)" = ok ]; then served=yes; break; fi
  sleep 0.1
done
[ -n "$served" ] || fail "without NOTIFY_SOCKET: never saw /readyz answer while activating ($(show ActiveState))"
[ "$(show ActiveState)" = activating ] || fail "without NOTIFY_SOCKET the unit went $(show ActiveState)"
for _ in $(seq 1 200); do  # TimeoutStartSec=8; Restart=no keeps the failed state to read
  [ "$(show ActiveState)" = activating ] || break
  sleep 0.1
done
result=$(show Result)
[ "$result" = timeout ] || fail "without READY=1: Result=$result, expected timeout"
[ "$(show ActiveState)" != active ] || fail "without READY=1 the unit is active"
inside rm /run/systemd/system/knit-server.service.d/no-notify.conf
inside systemctl daemon-reload
inside systemctl reset-failed knit-server
say "with READY=1 never sent (NOTIFY_SOCKET unset, the server serving meanwhile): start failed, Result=$result, never active"

# 3: process mode under the sandbox.
inside sh -c 'echo KNIT_ISOLATION=process >>/etc/default/knit-server'
t=$(now)
inside systemctl restart knit-server || fail "restart with KNIT_ISOLATION=process: $(inside journalctl -u knit-server -n 20 --no-pager)"
t_ready_process=$(since "$t")
main=$(show MainPID)
post_ssr() {
  inside curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X POST -H 'content-type: application/json' \
    -d '{"name":"Ari","plan":"pro","bio":"boot test","projects":3}' http://127.0.0.1:3000/ssr
}
workers_of() { inside ps -o comm= --ppid "$1" | grep -c '^knit-proc' || true; }
ssr=$(post_ssr)
[ "$ssr" = 200 ] || fail "POST /ssr in process mode answered $ssr: $(inside journalctl -u knit-server -n 20 --no-pager)"
workers=$(workers_of "$main")
[ "$workers" -ge 1 ] || fail "no knit-proc process under the main process $main"
metric=$(inside curl -s --max-time 5 http://127.0.0.1:3000/metrics | sed -n 's/^knit_worker_processes //p')
[ "${metric:-0}" -ge 1 ] || fail "/metrics: knit_worker_processes is '${metric}'"
user=$(inside ps -o user= -p "$main")
say "process mode: restart to READY=1 in $t_ready_process s, POST /ssr 200, $workers worker process(es), knit_worker_processes $metric, running as $user"

# 4: stop, timed, within TimeoutStopSec.
timeout_stop=$(show TimeoutStopUSec)
t=$(now)
inside systemctl stop knit-server || fail "systemctl stop"
t_stop=$(since "$t")
[ "$(show Result)" = success ] || fail "stop: Result=$(show Result)"
[ "$(show ExecMainStatus)" = 0 ] || fail "stop: exit status $(show ExecMainStatus)"
awk -v s="$t_stop" 'BEGIN {exit !(s < 20)}' || fail "stop took $t_stop s (TimeoutStopSec $timeout_stop)"
left=$(inside pgrep -c '^knit-' || true)
[ "$left" = 0 ] || fail "$left knit process(es) left after stop"
say "systemctl stop: exit 0 in $t_stop s (TimeoutStopSec $timeout_stop), no process left"

# 5: SIGKILL, to every process of the unit and then to the main one alone.
inside systemctl start knit-server
for whom in all main; do
  before=$(show MainPID)
  # A heavy call first, so the server has its worker process (started for the first call).
  [ "$(post_ssr)" = 200 ] || fail "POST /ssr before the kill"
  [ "$(workers_of "$before")" -ge 1 ] || fail "no worker process under $before before the kill"
  restarts=$(show NRestarts)
  inside systemctl kill -s SIGKILL --kill-whom="$whom" knit-server
  back=
  for _ in $(seq 1 200); do  # RestartSec=1: back within 20 s
    pid=$(show MainPID)
    if [ "$pid" != 0 ] && [ "$pid" != "$before" ] && [ "$(show SubState)" = running ]; then
      back=$pid; break
    fi
    sleep 0.1
  done
  [ -n "$back" ] || fail "kill --kill-whom=$whom: not restarted ($(show ActiveState)/$(show SubState))"
  [ "$(show NRestarts)" -gt "$restarts" ] || fail "kill --kill-whom=$whom: NRestarts stayed $restarts"
  # No worker of the killed process survives: every knit-proc is a child of the new one.
  orphans=$(inside ps -eo ppid=,comm= | awk -v p="$back" '$2 ~ /^knit-proc/ && $1 != p' | wc -l)
  [ "$orphans" = 0 ] || fail "kill --kill-whom=$whom: $orphans worker process(es) not under the new main process"
  [ "$(post_ssr)" = 200 ] || fail "kill --kill-whom=$whom: POST /ssr after the restart"
  fresh=$(workers_of "$back")
  [ "$fresh" -ge 1 ] || fail "kill --kill-whom=$whom: the restarted server has no worker process"
  got=$(readyz)
  [ "$got" = ok ] || fail "after kill --kill-whom=$whom and the restart: /readyz '$got'"
  say "systemctl kill -s SIGKILL --kill-whom=$whom: main $before -> $back (NRestarts $(show NRestarts)), no worker left behind, POST /ssr 200 on $fresh new worker process(es), /readyz $got"
done
inside systemctl stop knit-server

# 6: the journal.
journal=$(inside journalctl -u knit-server --no-pager -o cat)
grep -q '^listening on http://127.0.0.1:3000' <<<"$journal" || fail "no 'listening on' line in the journal"
grep -q '^mode: pooled' <<<"$journal" || fail "no 'mode: pooled' banner line in the journal"
grep -q '^knit-server: stopped' <<<"$journal" || fail "no 'knit-server: stopped' line in the journal"
say "journalctl -u knit-server: $(grep -c '^listening on' <<<"$journal") banners, $(grep -c '^knit-server: stopped' <<<"$journal") stop lines"

t=$(now)
kill -TERM "$nspawn_pid"
wait "$nspawn_pid" || true
nspawn_pid=
t_halt=$(since "$t")
say "timings: rootfs $t_rootfs s ($built), extract $t_extract s, boot $t_boot s, apt install $t_install s, start to READY=1 $t_ready s (process mode $t_ready_process s), stop $t_stop s, halt $t_halt s"
say "passed"

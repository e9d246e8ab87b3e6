#!/usr/bin/env bash
# deploy/fleet.sh: N knit-server instances behind HAProxy, all on 127.0.0.1.
#
# usage: deploy/fleet.sh start N     start N instances and HAProxy in front; print the front
#                                    port and the stats address; returns once all are UP
#        deploy/fleet.sh restart     rolling restart: one instance at a time, SIGTERM, wait
#                                    for its exit, start it again, wait until HAProxy sees it UP
#        deploy/fleet.sh stop        stop HAProxy, then every instance, by their PIDs
#        deploy/fleet.sh status      each process alive or not, and HAProxy's view of each server
#        deploy/fleet.sh stat NAME FIELD   one field of HAProxy's `show stat` for server NAME
#                                    (k1..kN), e.g. status, stot, hrsp_2xx (for scripts, tests)
#        deploy/fleet.sh run N       start N, then stay in the foreground until SIGTERM/SIGINT,
#                                    which stops everything (knit-bench runs a fleet this way)
#
# Settings (environment; anything else, e.g. KNIT_MODE, KNIT_THREADS, JWT_SECRET, is passed to
# every instance as it is):
#   KNIT_FLEET_DIR            run dir: pid, rc and log files, haproxy.cfg, the stats socket
#                             (default /tmp/knit-fleet-UID)
#   KNIT_FLEET_BASE_PORT      first port tried (default 8100); the front, the stats page and
#                             each instance take the first free ports from there up
#   KNIT_FLEET_FRONT_PORT     the front port, if it must be that one (must be free)
#   KNIT_FLEET_SERVER         the knit-server binary (default build/bin/knit-server)
#   KNIT_FLEET_HAPROXY        the haproxy binary (default: haproxy on PATH)
#   KNIT_FLEET_CHECK_INTER_MS health check interval (1000), KNIT_FLEET_CHECK_FALL (2),
#   KNIT_FLEET_CHECK_RISE (2)
#   KNIT_DRAIN_DELAY_MS       passed to each instance; default inter x (fall + 1); refused at
#                             or below inter x fall, where HAProxy could still send a request
#                             to a listener that is already closed
#   KNIT_FLEET_CHECK_PATH     what HAProxy and this script ask to tell ready (/readyz: 503 from
#                             SIGTERM on, while the instance still serves for the drain delay)
#   KNIT_FLEET_MAXCONN        HAProxy's maxconn per instance (default 2 x KNIT_THREADS + 8;
#                             deploy/haproxy.cfg.in says why)
#   KNIT_FLEET_HAPROXY_THREADS HAProxy's nbthread (1)
#   KNIT_FLEET_TIMEOUT_S      how long any one wait may take before it is an error (30)
#
# Exit status: 0 done, 1 failed (the message says what, with the log's tail), 2 bad usage.
# A `start` that fails half way stops what it had started (trap), by PID; nothing is ever
# killed by name.
set -euo pipefail

here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
repo=$(dirname "$here")
run_dir=${KNIT_FLEET_DIR:-/tmp/knit-fleet-$(id -u)}
timeout_s=${KNIT_FLEET_TIMEOUT_S:-30}

die() { echo "fleet: $*" >&2; exit 1; }
note() { echo "fleet: $*" >&2; }
usage() { sed -n '4,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

is_uint() { case "$1" in '' | *[!0-9]*) return 1 ;; *) return 0 ;; esac; }
need_uint() {  # need_uint NAME VALUE MIN
  if ! is_uint "$2" || [ "$2" -lt "$3" ]; then die "$1 must be an integer >= $3 (got '$2')"; fi
}

now_ms() { date +%s%3N; }

# ---- files of the run dir --------------------------------------------------------------
pid_file() { echo "$run_dir/$1.pid"; }   # the process's own PID (knit-server, haproxy)
rc_file() { echo "$run_dir/$1.rc"; }     # its exit status, written by its supervisor shell
log_file() { echo "$run_dir/$1.log"; }   # its stdout and stderr, every start appended
state_file="$run_dir/fleet.state"        # the fleet's settings, for restart/stop/status
socket="$run_dir/haproxy.sock"

alive() {  # alive NAME: its recorded PID runs and has not exited
  local pid
  [ -s "$(pid_file "$1")" ] || return 1
  pid=$(cat "$(pid_file "$1")")
  [ ! -e "$(rc_file "$1")" ] && kill -0 "$pid" 2>/dev/null
}

log_tail() {  # log_tail NAME: the last lines of its log, indented, on stderr
  local f
  f=$(log_file "$1")
  [ -f "$f" ] || return 0
  echo "---- last lines of $f" >&2
  tail -n 20 "$f" | sed 's/^/    /' >&2
}

# ---- ports -----------------------------------------------------------------------------
port_busy() {  # port_busy PORT: something listens on it (any address)
  [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]
}
taken_ports=" "
# take_free_port FROM: sets free_port to the first port >= FROM that is free and not taken
# yet by this fleet (not in a subshell: taken_ports must remember it).
take_free_port() {
  local p=$1
  while [ "$p" -lt 65535 ]; do
    if [[ "$taken_ports" != *" $p "* ]] && ! port_busy "$p"; then
      taken_ports+="$p "
      free_port=$p
      return 0
    fi
    p=$((p + 1))
  done
  die "no free port at or above $1"
}

# ---- processes -------------------------------------------------------------------------
# spawn NAME CMD...: runs CMD in a session of its own (no terminal signal reaches it, it
# outlives this script), stdout and stderr appended to NAME.log. A supervisor shell is its
# parent: it writes the PID to NAME.pid and, once CMD exits, its status to NAME.rc, so
# "wait for exit" is "NAME.rc appears" and the status is known although CMD is not our child.
spawn() {
  local name=$1; shift
  local pidf rcf logf
  pidf=$(pid_file "$name"); rcf=$(rc_file "$name"); logf=$(log_file "$name")
  rm -f "$pidf" "$rcf"
  echo "=== fleet: $name started $(date -u +%FT%TZ)" >>"$logf"
  # shellcheck disable=SC2016  # expanded by the supervisor shell
  # The supervisor outlives a SIGTERM sent to the whole process tree (knit-bench stops a
  # fleet so): it traps the signal with a no-op, which exec resets for CMD, and waits on.
  setsid bash -c 'log=$0 pidf=$1 rcf=$2; shift 2
                  "$@" >>"$log" 2>&1 </dev/null & pid=$!
                  echo $pid >"$pidf.tmp"; mv "$pidf.tmp" "$pidf"
                  trap : TERM INT HUP
                  while kill -0 $pid 2>/dev/null; do wait $pid; done
                  wait $pid; echo $? >"$rcf"' "$logf" "$pidf" "$rcf" "$@" </dev/null &
  local deadline=$(($(now_ms) + 5000))
  until [ -s "$pidf" ]; do
    [ "$(now_ms)" -lt "$deadline" ] || die "$name: no PID file after 5 s"
    sleep 0.02
  done
}

# wait_exit NAME SECONDS: waits for NAME's exit status; prints it. Returns 1 on time-out.
wait_exit() {
  local rcf deadline
  rcf=$(rc_file "$1"); deadline=$(($(now_ms) + $2 * 1000))
  until [ -s "$rcf" ]; do
    [ "$(now_ms)" -lt "$deadline" ] || return 1
    sleep 0.02
  done
  cat "$rcf"
}

# stop_process NAME SIGNAL GRACE_S: SIGNAL, then SIGKILL after GRACE_S; prints the status.
stop_process() {
  local name=$1 sig=$2 grace=$3 pid rc
  alive "$name" || { [ -s "$(rc_file "$name")" ] && cat "$(rc_file "$name")"; return 0; }
  pid=$(cat "$(pid_file "$name")")
  kill "-$sig" "$pid" 2>/dev/null || true
  if ! rc=$(wait_exit "$name" "$grace"); then
    note "$name (PID $pid) still running ${grace} s after SIG$sig: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    rc=$(wait_exit "$name" 5) || die "$name (PID $pid) survived SIGKILL"
  fi
  echo "$rc"
}

# ---- HAProxy's view, through its stats socket ------------------------------------------
haproxy_cmd() { echo "$1" | socat -t 2 - "UNIX-CONNECT:$socket"; }

# server_stat NAME FIELD: one column of `show stat` for backend server NAME.
server_stat() {
  haproxy_cmd "show stat" 2>/dev/null | awk -F, -v sv="$1" -v field="$2" '
    NR == 1 { for (i = 1; i <= NF; i++) { h = $i; sub(/^# /, "", h); col[h] = i }; next }
    $col["pxname"] == "knit_servers" && $col["svname"] == sv { print $col[field] }'
}
# server_status NAME: HAProxy's status of backend server NAME ("UP", "DOWN", "UP 1/2", ...).
server_status() { server_stat "$1" status; }

# wait_status NAME STATUS SECONDS: until HAProxy reports exactly STATUS for NAME.
wait_status() {
  local deadline=$(($(now_ms) + $3 * 1000)) st=""
  while :; do
    st=$(server_status "$1")
    [ "$st" = "$2" ] && return 0
    [ "$(now_ms)" -lt "$deadline" ] || { note "$1: HAProxy says '${st:-nothing}', not $2, after $3 s"; return 1; }
    sleep 0.05
  done
}

# ---- instances -------------------------------------------------------------------------
# start_instance K: instance kK on its recorded port, ready (its /readyz answers 200).
start_instance() {
  local k=$1 name="k$1" port
  port=$(cat "$run_dir/$name.port")
  port_busy "$port" && { die "$name: port $port is taken by another process"; }
  PORT=$port HOST=127.0.0.1 KNIT_DRAIN_DELAY_MS=$drain_ms JWT_SECRET=$jwt_secret \
    spawn "$name" "$server"
  local deadline=$(($(now_ms) + timeout_s * 1000)) code
  while :; do
    if ! alive "$name"; then
      log_tail "$name"
      die "$name exited (status $(cat "$(rc_file "$name")" 2>/dev/null || echo '?')) before it was ready on port $port"
    fi
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$port$check_path" || true)
    [ "$code" = 200 ] && return 0
    if [ "$(now_ms)" -ge "$deadline" ]; then
      log_tail "$name"
      die "$name: GET $check_path on port $port answered '${code}', not 200, for ${timeout_s} s"
    fi
    sleep 0.05
  done
}

write_config() {
  local servers="" k
  for k in $(seq 1 "$count"); do
    servers+="    server k$k 127.0.0.1:$(cat "$run_dir/k$k.port")"$'\n'
  done
  awk -v front="$front_port" -v stats="$stats_port" -v sock="$socket" -v inter="$inter_ms" \
      -v fall="$fall" -v rise="$rise" -v maxconn="$maxconn" -v threads="$haproxy_threads" \
      -v servers="$servers" -v check_path="$check_path" '
    /^[[:space:]]*@SERVERS@[[:space:]]*$/ { printf "%s", servers; next }
    { gsub(/@FRONT_PORT@/, front); gsub(/@STATS_PORT@/, stats); gsub(/@STATS_SOCKET@/, sock)
      gsub(/@INTER_MS@/, inter); gsub(/@FALL@/, fall); gsub(/@RISE@/, rise)
      gsub(/@MAXCONN@/, maxconn); gsub(/@HAPROXY_THREADS@/, threads)
      gsub(/@CHECK_PATH@/, check_path); print }' \
    "$here/haproxy.cfg.in" >"$run_dir/haproxy.cfg"
  "$haproxy" -c -q -f "$run_dir/haproxy.cfg" >"$run_dir/haproxy-check.log" 2>&1 ||
    { cat "$run_dir/haproxy-check.log" >&2; die "HAProxy refuses $run_dir/haproxy.cfg"; }
}

load_state() {
  [ -s "$state_file" ] || die "no fleet in $run_dir (no fleet.state); start one: deploy/fleet.sh start N"
  # shellcheck source=/dev/null
  . "$state_file"
}

names() {  # every process of the fleet, HAProxy first
  echo haproxy
  seq 1 "$count" | sed 's/^/k/'
}

# ---- commands --------------------------------------------------------------------------
cmd_start() {
  count=${1:-}
  need_uint "the number of instances" "$count" 1
  [ "$count" -le 64 ] || die "at most 64 instances (got $count)"
  inter_ms=${KNIT_FLEET_CHECK_INTER_MS:-1000}; need_uint KNIT_FLEET_CHECK_INTER_MS "$inter_ms" 10
  fall=${KNIT_FLEET_CHECK_FALL:-2}; need_uint KNIT_FLEET_CHECK_FALL "$fall" 1
  rise=${KNIT_FLEET_CHECK_RISE:-2}; need_uint KNIT_FLEET_CHECK_RISE "$rise" 1
  drain_ms=${KNIT_DRAIN_DELAY_MS:-$((inter_ms * (fall + 1)))}; need_uint KNIT_DRAIN_DELAY_MS "$drain_ms" 0
  [ "$drain_ms" -gt $((inter_ms * fall)) ] ||
    die "KNIT_DRAIN_DELAY_MS=$drain_ms must exceed inter x fall = $((inter_ms * fall)) ms: HAProxy may still send requests that long after SIGTERM"
  check_path=${KNIT_FLEET_CHECK_PATH:-/readyz}
  case "$check_path" in /*) ;; *) die "KNIT_FLEET_CHECK_PATH must start with / (got '$check_path')" ;; esac
  local threads=${KNIT_THREADS:-1}; is_uint "$threads" || threads=1
  maxconn=${KNIT_FLEET_MAXCONN:-$((2 * threads + 8))}; need_uint KNIT_FLEET_MAXCONN "$maxconn" 1
  haproxy_threads=${KNIT_FLEET_HAPROXY_THREADS:-1}; need_uint KNIT_FLEET_HAPROXY_THREADS "$haproxy_threads" 1
  server=$(readlink -f "${KNIT_FLEET_SERVER:-$repo/build/bin/knit-server}" || true)
  [ -x "$server" ] || die "no knit-server at ${KNIT_FLEET_SERVER:-$repo/build/bin/knit-server}; build it (./knit build) or set KNIT_FLEET_SERVER"
  haproxy=$(command -v "${KNIT_FLEET_HAPROXY:-haproxy}" || true)
  [ -n "$haproxy" ] || die "haproxy is not installed (Debian: apt-get install haproxy; ./knit deps does it)"
  command -v socat >/dev/null || die "socat is not installed (it reads HAProxy's stats socket; ./knit deps)"
  command -v curl >/dev/null || die "curl is not installed (./knit deps)"
  command -v ss >/dev/null || die "ss (iproute2) is not installed (./knit deps)"

  mkdir -p "$run_dir"
  # shellcheck source=/dev/null
  if [ -s "$state_file" ] &&
     (. "$state_file"; for n in $(names); do alive "$n" && exit 0; done; exit 1); then
    die "a fleet is already running in $run_dir (deploy/fleet.sh status, deploy/fleet.sh stop)"
  fi
  rm -f "$run_dir"/*.pid "$run_dir"/*.rc "$run_dir"/*.port "$state_file" "$socket"
  # One secret for every instance, so that any of them answers /jwt alike; kept for restarts.
  jwt_secret=${JWT_SECRET:-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')}

  # From here on a failure stops whatever was started.
  trap 'on_start_failure' EXIT
  local base=${KNIT_FLEET_BASE_PORT:-8100}; need_uint KNIT_FLEET_BASE_PORT "$base" 1
  if [ -n "${KNIT_FLEET_FRONT_PORT:-}" ]; then
    front_port=$KNIT_FLEET_FRONT_PORT; need_uint KNIT_FLEET_FRONT_PORT "$front_port" 1
    port_busy "$front_port" && die "KNIT_FLEET_FRONT_PORT=$front_port is taken"
    taken_ports+="$front_port "
  else
    take_free_port "$base"; front_port=$free_port
  fi
  take_free_port "$base"; stats_port=$free_port
  local k
  for k in $(seq 1 "$count"); do take_free_port "$base"; echo "$free_port" >"$run_dir/k$k.port"; done
  {
    printf 'count=%q\nfront_port=%q\nstats_port=%q\ninter_ms=%q\nfall=%q\nrise=%q\n' \
      "$count" "$front_port" "$stats_port" "$inter_ms" "$fall" "$rise"
    printf 'drain_ms=%q\nmaxconn=%q\nhaproxy_threads=%q\nserver=%q\nhaproxy=%q\n' \
      "$drain_ms" "$maxconn" "$haproxy_threads" "$server" "$haproxy"
    printf 'jwt_secret=%q\ncheck_path=%q\n' "$jwt_secret" "$check_path"
  } >"$state_file"
  chmod 600 "$state_file"

  for k in $(seq 1 "$count"); do start_instance "$k"; done
  write_config
  spawn haproxy "$haproxy" -db -f "$run_dir/haproxy.cfg"
  local deadline=$(($(now_ms) + timeout_s * 1000))
  until [ -S "$socket" ] && haproxy_cmd "show info" >/dev/null 2>&1; do
    alive haproxy || { log_tail haproxy; die "haproxy exited at start"; }
    [ "$(now_ms)" -lt "$deadline" ] || { log_tail haproxy; die "no HAProxy stats socket after ${timeout_s} s"; }
    sleep 0.05
  done
  for k in $(seq 1 "$count"); do
    wait_status "k$k" UP "$timeout_s" || { log_tail haproxy; die "HAProxy does not see k$k UP"; }
  done
  trap - EXIT
  echo "fleet: $count instance(s) of $server behind HAProxy, run dir $run_dir"
  echo "front: http://127.0.0.1:$front_port"
  echo "stats: http://127.0.0.1:$stats_port/  (socket $socket)"
  echo "checks: GET $check_path every $inter_ms ms, fall $fall, rise $rise; KNIT_DRAIN_DELAY_MS=$drain_ms; maxconn $maxconn per instance"
}

on_start_failure() {
  local rc=$?
  trap - EXIT
  note "start failed; stopping what was started"
  stop_all >/dev/null 2>&1 || true
  rm -f "$state_file"
  exit "$rc"
}

stop_all() {
  local n rc status=0
  # HAProxy first (SIGUSR1: soft stop, lets transfers end), so no request reaches an instance
  # that is going away; then each instance as a process manager would: SIGTERM, the drain.
  if [ -s "$(pid_file haproxy)" ]; then
    rc=$(stop_process haproxy USR1 5) || status=1
  fi
  for n in $(seq 1 "${count:-0}" | sed 's/^/k/'); do
    [ -s "$(pid_file "$n")" ] || continue
    rc=$(stop_process "$n" TERM $((drain_ms / 1000 + 15))) || { status=1; continue; }
    [ "$rc" = 0 ] || { note "$n exited with status $rc"; log_tail "$n"; status=1; }
  done
  return "$status"
}

cmd_stop() {
  load_state
  local status=0
  stop_all || status=$?
  rm -f "$state_file"
  echo "fleet: stopped (logs stay in $run_dir)"
  return "$status"
}

cmd_restart() {
  load_state
  alive haproxy || die "HAProxy is not running; start the fleet again (stop, then start N)"
  local k name pid rc t0 t_down status=0
  for k in $(seq 1 "$count"); do
    name="k$k"
    if alive "$name"; then
      pid=$(cat "$(pid_file "$name")")
      t0=$(now_ms)
      kill -TERM "$pid"
      # HAProxy must take it out before its listener closes: inter x fall < the drain delay.
      if wait_status "$name" DOWN $(((inter_ms * fall + drain_ms) / 1000 + 2)); then
        t_down=$(($(now_ms) - t0))
      else
        t_down="?"; status=1
      fi
      rc=$(wait_exit "$name" $((drain_ms / 1000 + 15))) || {
        log_tail "$name"; die "$name (PID $pid) did not exit after SIGTERM; left as it is"; }
      [ "$rc" = 0 ] || { note "$name (PID $pid) exited with status $rc"; log_tail "$name"; status=1; }
      note "$name: SIGTERM -> DOWN in HAProxy after ${t_down} ms, exited $rc after $(($(now_ms) - t0)) ms"
    else
      note "$name was not running; starting it"
    fi
    start_instance "$k"
    wait_status "$name" UP "$timeout_s" || { log_tail haproxy; die "HAProxy does not see $name UP again"; }
    note "$name: PID $(cat "$(pid_file "$name")") UP in HAProxy"
  done
  [ "$status" = 0 ] || die "restart done, with the problems above"
  echo "fleet: rolling restart of $count instance(s) done"
}

cmd_status() {
  load_state
  local n st pid port status=0
  echo "fleet: $count instance(s), front http://127.0.0.1:$front_port, stats http://127.0.0.1:$stats_port/, run dir $run_dir"
  for n in $(names); do
    pid=$(cat "$(pid_file "$n")" 2>/dev/null || echo -)
    if [ "$n" = haproxy ]; then port=$front_port; else port=$(cat "$run_dir/$n.port"); fi
    if alive "$n"; then st=running; else st="not running"; status=1; fi
    if [ "$n" != haproxy ] && alive haproxy; then st+=", HAProxy: $(server_status "$n")"; fi
    printf '  %-8s PID %-8s port %-6s %s\n' "$n" "$pid" "$port" "$st"
  done
  return "$status"
}

cmd_run() {
  cmd_start "$@"
  trap 'trap - TERM INT EXIT; stop_all; rm -f "$state_file"; exit 0' TERM INT
  trap 'stop_all; rm -f "$state_file"' EXIT
  # Waits in the foreground; `wait` returns on a signal, so the trap runs at once.
  while :; do
    sleep 1 &
    wait $! || true
    alive haproxy || { log_tail haproxy; die "haproxy exited"; }
  done
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  start) cmd_start "$@" ;;
  run) cmd_run "$@" ;;
  restart) cmd_restart ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  stat)
    [ $# -eq 2 ] || usage
    load_state
    v=$(server_stat "$1" "$2")
    [ -n "$v" ] || die "HAProxy has no field '$2' for server '$1' (is it running?)"
    echo "$v" ;;
  *) usage ;;
esac

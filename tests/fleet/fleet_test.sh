#!/usr/bin/env bash
# The whole fleet, end to end on 127.0.0.1: deploy/fleet.sh starts HAProxy and 3 knit-server
# instances, knit-load offers a fixed mixed /ping /ssr /jwt load through HAProxy, and
#   1. every instance is restarted in turn (fleet.sh restart: SIGTERM, wait for the exit,
#      start again, wait until HAProxy sees it UP) under that load: the client must see
#      0 non-2xx responses and 0 connection errors;
#   2. one instance is SIGKILLed under load: the client's failures must not exceed the
#      requests that instance can have had in flight (at most the client's concurrency, and
#      at most HAProxy's maxconn for it), HAProxy must mark it DOWN (read from its stats
#      socket) within the bound below, and the two left must serve on with 0 failures;
#   3. one more instance is SIGKILLed with no traffic, so that only HAProxy's health checks
#      can see it: DOWN within the same bound.
# The bound on DOWN is what haproxy.cfg's checks guarantee: `inter` x `fall` after the kill
# (the worst case: the last good check just before it, then `fall` failed ones, `inter`
# apart; fastinter is unset, so a server in transition is checked every `inter` too; a
# killed instance's port refuses at once, so a failed check takes no time), plus a stated
# margin for HAProxy's timers and this script's poll (a fleet.sh + socat round trip, a few
# tens of ms) on a loaded machine. Under traffic HAProxy usually sees it first
# (`observe layer4`: a refused connection marks the server DOWN at once); the checks are the
# guarantee either way. Each DOWN is measured as the interval between the start of the last
# poll that saw the server up and the end of the first that saw it DOWN; the assertion is
# on the interval's end, which is never earlier than the real time.
# Every wait is on a condition with a bound; the load is a fixed rate, so the number of
# requests is bounded too. On failure it prints what happened: the client's figures, the
# restart's log, each instance's log and HAProxy's.
#
# usage: tests/fleet/fleet_test.sh KNIT_SERVER KNIT_LOAD        exit 0 pass, 1 fail, 77 skip
set -uo pipefail

server=${1:?usage: fleet_test.sh KNIT_SERVER KNIT_LOAD}
load=${2:?usage: fleet_test.sh KNIT_SERVER KNIT_LOAD}
repo=$(cd "$(dirname "$(readlink -f "$0")")/../.." && pwd)
fleet=$repo/deploy/fleet.sh

if ! command -v haproxy >/dev/null; then
  echo "fleet_test: SKIPPED: haproxy is not installed (Debian 12: apt-get install haproxy, or ./knit deps)"
  exit 77
fi
for tool in socat curl ss; do
  command -v "$tool" >/dev/null || { echo "fleet_test: $tool is not installed (./knit deps)"; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/knit-fleet-test.XXXXXX")
export KNIT_FLEET_DIR=$work/run KNIT_FLEET_SERVER=$server
# Fast checks, so the test is short: DOWN within inter x fall = 2 x 200 ms of a kill (+ the
# margin below), drain 600 ms (fleet.sh's rule: inter x (fall + 1)).
export KNIT_FLEET_CHECK_INTER_MS=200 KNIT_FLEET_CHECK_FALL=2 KNIT_FLEET_CHECK_RISE=2
export KNIT_FLEET_TIMEOUT_S=20
# Below the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768 by default): a test
# running beside this one that binds port 0, or connects anywhere, gets its port from that
# range, and could take an instance's port between fleet.sh's probe and the bind, or while the
# instance restarts (seen: "Address already in use" under ctest -j). A random hundred in
# 20000 up to that range keeps parallel fleet runs from probing the same ports (fleet.sh
# still skips any port in use).
ephemeral_low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
slots=$(( (ephemeral_low - 20000 - 200) / 100 ))
[ "$slots" -ge 1 ] || slots=1
export KNIT_FLEET_BASE_PORT=$((20000 + (RANDOM % slots) * 100))
export KNIT_MODE=pooled KNIT_THREADS=1 JWT_SECRET=fleet-test-secret
inter_ms=$KNIT_FLEET_CHECK_INTER_MS fall=$KNIT_FLEET_CHECK_FALL
# HAProxy's timers firing late and the poll's own round trip on a loaded machine (2 CPUs at
# load 10 once stretched a 400 ms bound to 509 ms, measured at a poll's end).
margin_ms=300
down_bound_ms=$((inter_ms * fall + margin_ms))

conns=4          # per route: the client's concurrency is 3 x conns
rate=150         # requests/s per route
failed=0
started=0

fail() { echo "FAIL  $*"; failed=1; }
ok() { echo "ok    $*"; }

# shellcheck disable=SC2317  # dump and cleanup run from the EXIT trap
dump() {
  echo "==== what happened (run dir $KNIT_FLEET_DIR)"
  [ -f "$work/restart.log" ] && { echo "---- fleet.sh restart"; cat "$work/restart.log"; }
  for f in "$work"/load-*.summary; do [ -f "$f" ] && { echo "---- $(basename "$f")"; cat "$f"; }; done
  for f in "$KNIT_FLEET_DIR"/k*.log; do
    [ -f "$f" ] && { echo "---- $(basename "$f") (last 40 lines)"; tail -n 40 "$f"; }
  done
  [ -f "$KNIT_FLEET_DIR/haproxy.log" ] && { echo "---- haproxy.log (last 80 lines)"; tail -n 80 "$KNIT_FLEET_DIR/haproxy.log"; }
}

# shellcheck disable=SC2317
cleanup() {
  local rc=$?
  [ "$started" = 1 ] && "$fleet" stop >"$work/stop.log" 2>&1
  if [ "$failed" != 0 ] || [ "$rc" != 0 ]; then dump; else rm -rf "$work"; fi
}
trap cleanup EXIT

now_ms() { date +%s%3N; }
stat() { "$fleet" stat "$1" "$2" 2>/dev/null; }
pid_of() { cat "$KNIT_FLEET_DIR/$1.pid"; }

# kill_and_time_down NAME: SIGKILLs instance NAME and polls HAProxy's status of it until
# DOWN (bounded: the bound + 5 s, so a late DOWN is still timed). Sets down_lo and down_hi,
# ms after the kill: the start of the last poll that saw it up and the end of the first
# that saw it DOWN, between which HAProxy marked it; down_hi is empty if it never did.
kill_and_time_down() {
  local name=$1 t_kill t0 st
  t_kill=$(now_ms)
  kill -KILL "$(pid_of "$name")"
  down_lo=0 down_hi=""
  while [ "$(now_ms)" -lt $((t_kill + down_bound_ms + 5000)) ]; do
    t0=$(now_ms)
    st=$(stat "$name" status)
    if [ "${st%% *}" = DOWN ]; then down_hi=$(($(now_ms) - t_kill)); return; fi
    down_lo=$((t0 - t_kill))
    sleep 0.01
  done
}

# expect_down_in_bound NAME WHEN: the verdict on kill_and_time_down's interval.
expect_down_in_bound() {
  if [ -z "$down_hi" ]; then
    fail "HAProxy did not mark $1 DOWN within $((down_bound_ms + 5000)) ms of SIGKILL $2 (status: $(stat "$1" status))"
  elif [ "$down_hi" -le "$down_bound_ms" ]; then
    ok "HAProxy marked $1 DOWN $down_lo-$down_hi ms after SIGKILL $2 (bound: inter x fall = $((inter_ms * fall)) ms + $margin_ms ms margin)"
  else
    fail "HAProxy marked $1 DOWN $down_lo-$down_hi ms after SIGKILL $2: over inter x fall = $((inter_ms * fall)) ms + $margin_ms ms margin"
  fi
}

# sum FIELD FILES...: the sum of every "FIELD":N in knit-load's JSON (one per route).
sum() {
  local field=$1; shift
  cat "$@" | grep -o "\"$field\":[0-9]*" | awk -F: '{ s += $2 } END { print s + 0 }'
}

cat >"$work/ssr.json" <<'EOF'
{"name":"Ari","plan":"pro","bio":"Building on Knitting","projects":17}
EOF
cat >"$work/jwt.json" <<'EOF'
{"user":{"id":"u_42","email":"ari@example.com","role":"admin"},"ttlSec":900}
EOF

# load NAME SECONDS: one knit-load run through HAProxy at the fixed rate; JSON in load-NAME.json.
load() {
  "$load" --port "$front" --duration "$2" --timeout-ms 5000 --json "$work/load-$1.json" \
    --route "ping:GET:/ping:$conns:$rate" \
    --route "ssr:POST:/ssr:$conns:$rate:$work/ssr.json" \
    --route "jwt:POST:/jwt:$conns:$rate:$work/jwt.json" >"$work/load-$1.summary" 2>&1
}

t_start=$(now_ms)
if ! "$fleet" start 3 >"$work/start.log" 2>&1; then
  cat "$work/start.log"; fail "fleet.sh start 3"; exit 1
fi
started=1
front=$(sed -n 's|^front: http://127.0.0.1:||p' "$work/start.log")
[ -n "$front" ] || { cat "$work/start.log"; fail "no front port in fleet.sh's output"; exit 1; }
ok "fleet.sh start 3: front port $front"

# ---- 1. rolling restart under load ------------------------------------------------------
declare -A old_pid
for k in k1 k2 k3; do old_pid[$k]=$(pid_of $k); done
"$fleet" restart >"$work/restart.log" 2>&1 &
restart_pid=$!
# Load in back-to-back 1 s runs for as long as the restart lasts (bounded: 40 runs), then
# one more against the restarted fleet.
rounds=0
while kill -0 "$restart_pid" 2>/dev/null && [ "$rounds" -lt 40 ]; do
  rounds=$((rounds + 1))
  load "restart-$rounds" 1 || fail "knit-load run restart-$rounds failed"
done
wait "$restart_pid"
restart_rc=$?
rounds=$((rounds + 1))
load "restart-$rounds" 1 || fail "knit-load run restart-$rounds failed"
if [ "$restart_rc" = 0 ]; then ok "fleet.sh restart exited 0"; else fail "fleet.sh restart exited $restart_rc"; fi
if [ "$rounds" -ge 3 ]; then ok "$rounds load runs spanned the restart"; else fail "only $rounds load run(s) spanned the restart: it cannot have been under load"; fi
for k in k1 k2 k3; do
  if [ "$(pid_of $k)" != "${old_pid[$k]}" ] && grep -q "^fleet: $k: SIGTERM .* exited 0 " "$work/restart.log"; then
    ok "$k restarted: PID ${old_pid[$k]} exited 0 after SIGTERM, now PID $(pid_of $k)"
  else
    fail "$k was not restarted cleanly (PID ${old_pid[$k]} -> $(pid_of $k))"
  fi
done
files=("$work"/load-restart-*.json)
n_ok=$(sum successes "${files[@]}") n_bad=$(sum non2xx "${files[@]}") n_err=$(sum errors "${files[@]}")
echo "      rolling restart: $n_ok 2xx, $n_bad non-2xx, $n_err connection errors over $rounds runs"
[ "$n_ok" -gt 0 ] || fail "no successful response during the restart"
if [ "$n_bad" = 0 ]; then ok "0 non-2xx responses during the rolling restart"; else fail "$n_bad non-2xx responses during the rolling restart"; fi
if [ "$n_err" = 0 ]; then ok "0 connection errors during the rolling restart"; else fail "$n_err connection errors during the rolling restart"; fi

# ---- 2. one instance SIGKILLed under load ----------------------------------------------
victim=k2
load kill 4 &
load_pid=$!
# Kill it only once the load reaches it: HAProxy's session count for it has moved.
s0=$(stat $victim stot) deadline=$(($(now_ms) + 5000))
while [ "$(stat $victim stot)" -le $((s0 + 20)) ]; do
  [ "$(now_ms)" -lt "$deadline" ] || { fail "no load reached $victim within 5 s"; break; }
  sleep 0.02
done
kill_and_time_down $victim
wait "$load_pid" || fail "knit-load run kill failed"
expect_down_in_bound $victim "under load"
maxconn=$(sed -n 's/^maxconn=//p' "$KNIT_FLEET_DIR/fleet.state")
in_flight_bound=$((3 * conns < maxconn ? 3 * conns : maxconn))
k_bad=$(sum non2xx "$work/load-kill.json") k_err=$(sum errors "$work/load-kill.json")
k_ok=$(sum successes "$work/load-kill.json")
echo "      SIGKILL run: $k_ok 2xx, $k_bad non-2xx, $k_err connection errors"
if [ $((k_bad + k_err)) -le "$in_flight_bound" ]; then
  ok "$((k_bad + k_err)) failure(s) at the client <= $in_flight_bound (what $victim can have had in flight)"
else
  fail "$((k_bad + k_err)) failures at the client > $in_flight_bound, what $victim can have had in flight"
fi

# The two left serve on, and nothing goes to the dead one.
declare -A before
for k in k1 k2 k3; do before[$k]=$(stat $k stot); done
load after-kill 1 || fail "knit-load run after-kill failed"
a_bad=$(sum non2xx "$work/load-after-kill.json") a_err=$(sum errors "$work/load-after-kill.json")
if [ $((a_bad + a_err)) = 0 ]; then ok "after the SIGKILL: 0 failures on the two instances left"; else fail "after the SIGKILL: $a_bad non-2xx, $a_err errors"; fi
for k in k1 k3; do
  if [ "$(stat $k stot)" -gt "${before[$k]}" ]; then ok "$k serves on"; else fail "$k got no request after the SIGKILL"; fi
done
if [ "$(stat $victim stot)" = "${before[$victim]}" ]; then ok "nothing sent to the dead $victim"; else fail "HAProxy still sent requests to the dead $victim"; fi

# ---- 3. one more SIGKILLed with no traffic: only the checks can see it ------------------
# No load runs now: only the checks send it anything.
quiet=k3
st=$(stat $quiet status)
[ "${st%% *}" = UP ] || fail "$quiet is not UP before its kill (status: $st)"
kill_and_time_down $quiet
expect_down_in_bound $quiet "with no traffic"

# ---- stop: everything by PID, nothing left ---------------------------------------------
pids=$(cat "$KNIT_FLEET_DIR"/*.pid)
"$fleet" stop >"$work/stop.log" 2>&1
started=0
left=""
for p in $pids; do kill -0 "$p" 2>/dev/null && left+=" $p"; done
if [ -z "$left" ]; then ok "fleet.sh stop: no process left"; else fail "still running after fleet.sh stop:$left"; fi

echo "fleet_test: $(( ($(now_ms) - t_start) / 1000 )) s"
[ "$failed" = 0 ] && echo "fleet_test: all checks passed" && exit 0
exit 1

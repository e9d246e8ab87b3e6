#!/usr/bin/env bash
# Pooled /jwt, two knit-server builds side by side, each system call the server makes counted
# by type per request: where a change moves calls from one kind to another. At saturation
# (wrk -t1 -c50) or, with RATE set, at RATE requests/s (knit-load's open loop, 50
# connections), the load on CPU 1, the server (one loop, KNIT_THREADS=1 worker) on CPU 0,
# perf stat with one tracepoint per kind over the load's window. A fresh server per run, 2 s
# of warm-up (not counted), then WINDOW s; REPS rounds, A first in odd rounds, B first in
# even ones.
# Usage: bench/tools/syscalls_by_type.sh A_BINARY B_BINARY [OUT_FILE]
#   env: WINDOW=5 REPS=3 PORT=18438 RATE= SERVER_ENV="KNIT_HEAVY_SHARE=0" (given to both)
#   LOAD=build/bin/knit-load (with RATE)
set -euo pipefail
case ${1:-} in -h | --help) sed -n "2,11p" "$0"; exit 0 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
a=${1:?A binary}
b=${2:?B binary}
out=${3:-/dev/stdout}
WINDOW=${WINDOW:-5}
REPS=${REPS:-3}
PORT=${PORT:-18438}
RATE=${RATE:-}
LOAD=${LOAD:-$here/../../build/bin/knit-load}
if [ -n "$RATE" ]; then
  case $RATE in *[!0-9]* | 0*)
    echo "syscalls_by_type.sh: RATE=$RATE is not a positive whole number of requests/s" >&2
    exit 2
    ;;
  esac
  [ -x "$LOAD" ] || { echo "syscalls_by_type.sh: no knit-load at $LOAD (build it, or set LOAD)" >&2; exit 2; }
fi
body=$(mktemp)
trap 'rm -f "$body" "$body.json"' EXIT
# The body wrk_jwt.lua posts, so both loads send the same request.
sed -n "s/^wrk\.body = '\(.*\)'\$/\1/p" "$here/wrk_jwt.lua" | tr -d '\n' >"$body"
[ -s "$body" ] || { echo "syscalls_by_type.sh: no wrk.body line in wrk_jwt.lua" >&2; exit 2; }
# The load for $1 seconds; prints the responses it got.
load() {
  if [ -z "$RATE" ]; then
    taskset -c 1 wrk -t1 -c50 -d"${1}s" -s "$here/wrk_jwt.lua" "http://127.0.0.1:$PORT/jwt" |
      awk '/requests in/ {print $1}'
  else
    taskset -c 1 "$LOAD" --port "$PORT" --duration "$1" --json "$body.json" \
      --route "jwt:POST:/jwt:50:$RATE:$body" >/dev/null 2>&1
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["routes"]["jwt"]["summary"]["requests"])' \
      "$body.json"
  fi
}
kinds="io_uring_enter epoll_wait epoll_ctl recvmsg sendmsg futex read write timerfd_settime"
events=(-e raw_syscalls:sys_enter)
for k in $kinds; do events+=(-e "syscalls:sys_enter_$k"); done
echo "# $(date -u +%FT%TZ) loadavg $(cut -d' ' -f1-3 /proc/loadavg); A=$a B=$b env: ${SERVER_ENV:-} rate: ${RATE:-saturating}" >>"$out"
one() {
  local label=$1 bin=$2 spid pp perf_out reqs
  # shellcheck disable=SC2086 # SERVER_ENV is a list of VAR=value words
  env ${SERVER_ENV:-} PORT=$PORT KNIT_MODE=pooled KNIT_THREADS=1 taskset -c 0 "$bin" \
    >/dev/null 2>&1 &
  spid=$!
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.05; done
  load 2 >/dev/null
  perf_out=$(mktemp)
  perf stat -x, "${events[@]}" -p "$spid" -o "$perf_out" -- sleep $((WINDOW + 1)) >/dev/null 2>&1 &
  pp=$!
  sleep 0.3
  reqs=$(load "$WINDOW")
  wait "$pp" || true
  kill "$spid"
  wait "$spid" 2>/dev/null || true
  grep -v '^#' "$perf_out" | grep . | awk -F, -v l="$label" -v r="$reqs" '
    { n = $3; sub(/.*sys_enter_?/, "", n); if (n == "") n = "all"; line = line sprintf(" %s=%.3f", n, $1 / r) }
    END { printf "%s requests=%d%s\n", l, r, line }' | tee -a "$out"
  rm -f "$perf_out"
}
for i in $(seq "$REPS"); do
  if [ $((i % 2)) -eq 1 ]; then one A "$a"; one B "$b"; else one B "$b"; one A "$a"; fi
done

#!/usr/bin/env bash
# Pooled /jwt at saturation, two knit-server builds side by side (issue 35's held wakes):
# wrk -t1 -c50 on CPU 1, the server (one loop, KNIT_THREADS=1 worker, both on CPU 0) under
# `perf stat -e raw_syscalls:sys_enter -e syscalls:sys_enter_futex` over wrk's window.
# Per run: requests/s, system calls and futex calls per request, server CPU-us per request
# (utime + stime from /proc over the window). A fresh server per run, 2 s of warm-up (not
# counted), then WINDOW s; REPS rounds, A first in odd rounds, B first in even ones.
# Usage: bench/tools/held_wakes_ab.sh A_BINARY B_BINARY [OUT_FILE]
#   env: WINDOW=8 REPS=3 PORT=18436 SERVER_ENV="KNIT_HEAVY_SHARE=0" (given to both)
set -euo pipefail
case ${1:-} in -h | --help) sed -n "2,10p" "$0"; exit 0 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
a=${1:?A binary}
b=${2:?B binary}
out=${3:-/dev/stdout}
WINDOW=${WINDOW:-8}
REPS=${REPS:-3}
PORT=${PORT:-18436}
hz=$(getconf CLK_TCK)
echo "# $(date -u +%FT%TZ) loadavg $(cut -d' ' -f1-3 /proc/loadavg); A=$a B=$b env: ${SERVER_ENV:-}" >>"$out"
one() {
  local label=$1 bin=$2 spid pp t0 t1 perf_out wrk_out
  # shellcheck disable=SC2086 # SERVER_ENV is a list of VAR=value words
  env ${SERVER_ENV:-} PORT=$PORT KNIT_MODE=pooled KNIT_THREADS=1 taskset -c 0 "$bin" \
    >/dev/null 2>&1 &
  spid=$!
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.05; done
  taskset -c 1 wrk -t1 -c50 -d2s -s "$here/wrk_jwt.lua" "http://127.0.0.1:$PORT/jwt" >/dev/null
  perf_out=$(mktemp)
  perf stat -x, -e raw_syscalls:sys_enter -e syscalls:sys_enter_futex -p "$spid" -o "$perf_out" \
    -- sleep $((WINDOW + 1)) >/dev/null 2>&1 &
  pp=$!
  sleep 0.3
  t0=$(awk '{print $14 + $15}' "/proc/$spid/stat")
  wrk_out=$(taskset -c 1 wrk -t1 -c50 -d"${WINDOW}s" -s "$here/wrk_jwt.lua" "http://127.0.0.1:$PORT/jwt")
  t1=$(awk '{print $14 + $15}' "/proc/$spid/stat")
  wait "$pp" || true
  kill "$spid"
  wait "$spid" 2>/dev/null || true
  local reqs rps calls futexes
  reqs=$(echo "$wrk_out" | awk '/requests in/ {print $1}')
  rps=$(echo "$wrk_out" | awk '/Requests\/sec/ {print $2}')
  calls=$(awk -F, '/raw_syscalls:sys_enter/ {print $1}' "$perf_out")
  futexes=$(awk -F, '/syscalls:sys_enter_futex/ {print $1}' "$perf_out")
  rm -f "$perf_out"
  awk -v l="$label" -v reqs="$reqs" -v rps="$rps" -v calls="$calls" -v fx="$futexes" \
      -v ticks=$((t1 - t0)) -v hz="$hz" 'BEGIN {
    printf "%s rps=%.0f syscalls/req=%.3f futex/req=%.3f cpu_us/req=%.2f\n",
      l, rps, calls / reqs, fx / reqs, ticks * 1e6 / hz / reqs }' | tee -a "$out"
}
for i in $(seq "$REPS"); do
  if [ $((i % 2)) -eq 1 ]; then one A "$a"; one B "$b"; else one B "$b"; one A "$a"; fi
done

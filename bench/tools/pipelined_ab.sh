#!/usr/bin/env bash
# Server CPU per pipelined /ping, knit-server builds side by side: TechEmpower's plaintext
# shape (wrk -t1 -c50, 16 requests a write: wrk_pipeline16.lua) against each build in turn,
# ROUNDS rounds, the order reversed every other round. Server on CPU 0 (KNIT_MODE=inline,
# KNIT_THREADS=1, KNIT_IO=$IO), wrk on CPU 1 (taskset). Saturated pipelining keeps the
# server's CPU busy, so the figure is its CPU time (utime + stime of /proc/PID/stat) over the
# responses wrk counted in the window, after a 1 s warm-up. Prints one row per run:
#   round <TAB> build <TAB> responses <TAB> server CPU-µs per response
# Usage: bench/tools/pipelined_ab.sh BUILD... > rows.tsv
#   env: ROUNDS=6 SECONDS_EACH=8 IO=uring PORT=18435
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 KNIT_SERVER_BINARY..." >&2; exit 2; }
ROUNDS=${ROUNDS:-6}
SECONDS_EACH=${SECONDS_EACH:-8}
IO=${IO:-uring}
PORT=${PORT:-18435}
hz=$(getconf CLK_TCK)
script=$here/wrk_pipeline16.lua
url=http://127.0.0.1:$PORT/ping

pid=
stop() { [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }; pid=; }
trap stop EXIT

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

printf 'round\tbuild\tresponses\tcpu_us_per_response\n'
for round in $(seq 1 "$ROUNDS"); do
  builds=("$@")
  if [ $((round % 2)) -eq 0 ]; then mapfile -t builds < <(printf '%s\n' "$@" | tac); fi
  for build in "${builds[@]}"; do
    env PORT="$PORT" KNIT_MODE=inline KNIT_THREADS=1 KNIT_IO="$IO" taskset -c 0 "$build" \
      >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do
      (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
      sleep 0.05
    done
    taskset -c 1 wrk -t1 -c50 -d1s -s "$script" "$url" >/dev/null
    before=$(cpu_ticks "$pid")
    out=$(taskset -c 1 wrk -t1 -c50 -d"${SECONDS_EACH}s" -s "$script" "$url")
    after=$(cpu_ticks "$pid")
    responses=$(echo "$out" | awk '/requests in/ { print $1 }')
    awk -v r="$round" -v b="$build" -v n="$responses" -v t=$((after - before)) -v hz="$hz" \
      'BEGIN { printf "%s\t%s\t%s\t%.3f\n", r, b, n, t / hz * 1e6 / n }'
    stop
  done
done

#!/usr/bin/env bash
# System calls and server CPU per request, knit-server before/after issue 35's session
# changes beside nginx, in one interleaved run (REPS rounds of every case):
#   knit /ping inline and pooled, knit /jwt pooled, nginx `return 200` /ping
#     (wrk -t1 -c50, one request per round trip): requests/s, server CPU us per request,
#     system calls per request (perf stat -e raw_syscalls:sys_enter -p <server pids>), and the
#     futex calls among them (syscalls:sys_enter_futex: worker wake-ups and parks);
#   pipelined depth 16 /ping (wrk_pipeline16.lua), knit before/after and nginx: the same figures;
#   uring-ping (bench/peers/uring_ping.cpp: an io_uring loop with no framework around it, the
#     floor an io_uring path for knit-server could approach) /ping and pipelined, when URING
#     names an executable; and /ping in each of URING_MODES' other designs (default: loop
#     hop; the modes are in uring_ping.cpp's header).
# RATE, when set (requests/s), measures at a fixed rate instead of at saturation: every /ping
#   window (not the pipelined or /jwt ones, which are skipped) is knit-load's open loop at RATE
#   over 50 connections (LOAD: the knit-load binary), so each server is compared at the same
#   load and no server's speed changes how the load generator batches (wrk at saturation is
#   on its own CPU, and a server that answers sooner leaves it sleeping more, which moves the
#   server's cost per request).
# BEFORE_IO and AFTER_IO, when set, are each side's KNIT_IO (docs/server-io.md): one binary
# with BEFORE_IO=epoll AFTER_IO=uring compares knit-server's two loops.
# When BEFORE and AFTER are the same file with the same KNIT_IO, knit runs once per round
# (cases named knit-after-*).
# Server on CPU 0, wrk on CPU 1 (taskset); before and after swap places every round (odd
# rounds before first, even rounds after first). Usage:
#   bench/tools/syscalls_per_request.sh [OUT_DIR]   env: WINDOW=10 (s per case) REPS=3 BEFORE=... AFTER=... BEFORE_IO= AFTER_IO= NGINX=... URING=... URING_MODES=
#   RATE= LOAD=build/bin/knit-load (a RATE that is not a positive whole number: exit 2)
# About 14 cases x REPS x (WINDOW + 2) s: 8 minutes with the defaults.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=${1:-$repo/bench/results/syscalls-per-request/out-$(date -u +%Y%m%dT%H%M%S)}
WINDOW=${WINDOW:-10}
REPS=${REPS:-3}
BEFORE=${BEFORE:-/work/ab/knit-server-before-sys}
AFTER=${AFTER:-$repo/build-sys/bin/knit-server}
NGINX=${NGINX:-/usr/sbin/nginx}
URING=${URING:-$repo/build/bin/uring-ping}
URING_MODES=${URING_MODES-loop hop}  # set and empty: none
BEFORE_IO=${BEFORE_IO:-}
AFTER_IO=${AFTER_IO:-}
PORT=${PORT:-18435}
RATE=${RATE:-}
LOAD=${LOAD:-$repo/build/bin/knit-load}
if [ -n "$RATE" ]; then
  case $RATE in *[!0-9]* | 0*)
    echo "syscalls_per_request.sh: RATE=$RATE is not a positive whole number of requests/s" >&2
    exit 2 ;;
  esac
  [ -x "$LOAD" ] || { echo "syscalls_per_request.sh: no knit-load at $LOAD (build it, or set LOAD)" >&2; exit 2; }
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)  # absolute: nginx reads its prefix and config from it
rows=$out/rows.tsv
printf 'rep\tcase\trequests\trps\tcpu_us_per_req\tsyscalls_per_req\tfutex_per_req\n' > "$rows"
hz=$(getconf CLK_TCK)

pids=()
stop_server() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap stop_server EXIT

wait_port() {
  for _ in $(seq 100); do
    if (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "nothing listens on $PORT" >&2; return 1
}

# start_knit BINARY MODE [IO]: knit-server on CPU 0 (with KNIT_IO=IO when given); pids=(its pid).
start_knit() {
  local io=()
  [ -n "${3:-}" ] && io=(KNIT_IO="$3")
  env PORT=$PORT KNIT_MODE=$2 KNIT_THREADS=1 "${io[@]}" taskset -c 0 "$1" >"$out/server.log" 2>&1 &
  pids=($!)
  wait_port
}

# start_nginx: the repo's nginx peer (bench/peers/nginx-ping.conf) on CPU 0; pids=(master).
start_nginx() {
  local d=$out/nginx
  mkdir -p "$d/tmp"
  sed -e "s/@PORT@/$PORT/" -e "s/@HOST@/127.0.0.1/" "$repo/bench/peers/nginx-ping.conf" > "$d/nginx.conf"
  taskset -c 0 "$NGINX" -p "$d" -c "$d/nginx.conf" -e stderr >"$out/nginx.log" 2>&1 &
  pids=($!)
  wait_port
}

# start_uring [MODE]: the io_uring peer on CPU 0; pids=(its pid).
start_uring() {
  taskset -c 0 "$URING" "$PORT" 127.0.0.1 "${1:-ring}" >"$out/uring.log" 2>&1 &
  pids=($!)
  wait_port
}

# The server's process tree: its pid and its children's (nginx's worker).
tree_pids() {
  local all=${pids[0]} kids
  kids=$(pgrep -P "${pids[0]}" | tr '\n' ',' | sed 's/,$//') || true
  [ -n "$kids" ] && all="$all,$kids"
  echo "$all"
}

# CPU ticks (user + system) of the pids (comma separated), every thread included.
cpu_ticks() {
  local sum=0 p
  for p in ${1//,/ }; do
    sum=$((sum + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  echo "$sum"
}

# load_ping SECONDS [JSON]: knit-load's open loop on CPU 1, /ping at RATE over 50 connections.
load_ping() {
  local json=()
  [ -n "${2:-}" ] && json=(--json "$2")
  taskset -c 1 "$LOAD" --port "$PORT" --duration "$1" "${json[@]}" \
    --route "ping:GET:/ping:50:$RATE" >/dev/null
}

# measure REP CASE PATH [wrk args...]: one wrk window against the running server.
measure() {
  local rep=$1 name=$2 path=$3; shift 3
  local tp c0 c1 wrk_out perf_out reqs rps calls
  tp=$(tree_pids)
  # Warm up the connections and the caches (not measured).
  if [ -n "$RATE" ]; then
    load_ping 1
  else
    taskset -c 1 wrk -t1 -c50 -d1 "http://127.0.0.1:$PORT$path" "$@" >/dev/null
  fi
  perf_out=$out/perf-$rep-$name.txt
  perf stat -x, -e raw_syscalls:sys_enter -e syscalls:sys_enter_futex -p "$tp" -o "$perf_out" -- sleep $((WINDOW + 1)) &
  local perf_pid=$!
  sleep 0.3
  c0=$(cpu_ticks "$tp")
  if [ -n "$RATE" ]; then
    load_ping "$WINDOW" "$out/load-$rep-$name.json"
    c1=$(cpu_ticks "$tp")
    wait "$perf_pid" || true
    reqs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["routes"]["ping"]["summary"]["successes"])' "$out/load-$rep-$name.json")
    rps=$(awk -v r="$reqs" -v w="$WINDOW" 'BEGIN {printf "%.0f", r / w}')
  else
    wrk_out=$(taskset -c 1 wrk -t1 -c50 -d"${WINDOW}s" "http://127.0.0.1:$PORT$path" "$@")
    c1=$(cpu_ticks "$tp")
    wait "$perf_pid" || true
    echo "$wrk_out" > "$out/wrk-$rep-$name.txt"
    reqs=$(echo "$wrk_out" | awk '/requests in/ {print $1}')
    rps=$(echo "$wrk_out" | awk '/Requests\/sec/ {print $2}')
  fi
  calls=$(awk -F, '/raw_syscalls:sys_enter/ {print $1}' "$perf_out")
  case $calls in ''|*[!0-9]*) calls=n/a ;; esac
  futexes=$(awk -F, '/syscalls:sys_enter_futex/ {print $1}' "$perf_out")
  case $futexes in ''|*[!0-9]*) futexes=n/a ;; esac
  awk -v rep="$rep" -v name="$name" -v reqs="$reqs" -v rps="$rps" -v ticks=$((c1 - c0)) \
      -v hz="$hz" -v calls="$calls" -v futexes="$futexes" 'BEGIN {
    cpu = reqs > 0 ? ticks * 1e6 / hz / reqs : 0
    sys = (calls == "n/a" || reqs == 0) ? "n/a" : sprintf("%.3f", calls / reqs)
    fx = (futexes == "n/a" || reqs == 0) ? "n/a" : sprintf("%.3f", futexes / reqs)
    printf "%s\t%s\t%d\t%s\t%.2f\t%s\t%s\n", rep, name, reqs, rps, cpu, sys, fx }' | tee -a "$rows"
}

pipe=(-s "$here/wrk_pipeline16.lua")
jwt=(-s "$here/wrk_jwt.lua")
for rep in $(seq "$REPS"); do
  order="before after"
  [ $((rep % 2)) -eq 0 ] && order="after before"
  [ "$BEFORE" -ef "$AFTER" ] && [ "$BEFORE_IO" = "$AFTER_IO" ] && order=after
  for bin in $order; do
    b=$BEFORE io=$BEFORE_IO
    [ $bin = after ] && b=$AFTER io=$AFTER_IO
    start_knit "$b" inline "$io"
    grep -m1 '^io: ' "$out/server.log" > "$out/io-$bin.txt" || true
    measure "$rep" "knit-$bin-inline-ping" /ping
    [ -z "$RATE" ] && measure "$rep" "knit-$bin-inline-ping-pipe16" /ping "${pipe[@]}" -- 16
    stop_server
    start_knit "$b" pooled "$io"
    measure "$rep" "knit-$bin-pooled-ping" /ping
    [ -z "$RATE" ] && measure "$rep" "knit-$bin-pooled-jwt" /jwt "${jwt[@]}"
    stop_server
  done
  start_nginx
  measure "$rep" nginx-ping /ping
  [ -z "$RATE" ] && measure "$rep" nginx-ping-pipe16 /ping "${pipe[@]}" -- 16
  stop_server
  if [ -x "$URING" ]; then
    start_uring
    measure "$rep" uring-ping /ping
    [ -z "$RATE" ] && measure "$rep" uring-ping-pipe16 /ping "${pipe[@]}" -- 16
    stop_server
    for mode in $URING_MODES; do
      start_uring "$mode"
      measure "$rep" "uring-$mode-ping" /ping
      stop_server
    done
  fi
done

# Medians over the rounds, one line per case.
{
  printf 'case\tmedian_rps\tmedian_cpu_us_per_req\tmedian_syscalls_per_req\tmedian_futex_per_req\n'
  tail -n +2 "$rows" | cut -f2 | awk '!seen[$0]++' | while read -r name; do
    awk -F'\t' -v n="$name" '$2 == n {print $4 "\t" $5 "\t" $6 "\t" $7}' "$rows" | python3 -c '
import statistics, sys
cols = list(zip(*(l.split("\t") for l in sys.stdin.read().split("\n") if l)))
def med(c):
    try: return "%.3f" % statistics.median(float(x) for x in c)
    except ValueError: return "n/a"
print("\t".join(med(c) for c in cols))' | sed "s/^/$name\t/"
  done
} | tee "$out/summary.tsv" | column -t

#!/usr/bin/env bash
# Worker-process kills under load, seen from the clients: knit-server with
# KNIT_ISOLATION=process serving /ssr and /jwt at a fixed rate while its worker processes are
# SIGKILLed one at a time; counts what each kill cost the clients (500s), checks that /ping
# lost nothing and that the server stops cleanly. Loopback only, bounded by its arguments.
#
#   bench/process/server_kills.sh [KILLS] [GAP_MS] [RATE_PER_ROUTE] [knit-server] [knit-load]
#     defaults: 100 kills 2000 ms apart, 1000 requests/s on each of /ssr and /jwt (+ 100/s
#     /ping), build/bin/knit-server build/bin/knit-load
#
# Server (2 pool workers, so its loop calls 2 worker processes, each with a spare up:
# KNIT_WORKER_SPARE, on by default, and a kill may land on a spare; KNIT_COST_PROFILE=bun)
# pinned to CPU 0, knit-load to CPU 1. A kill every GAP_MS of a random live worker process, from
# 2 s after the load starts; the load runs 2 s past the last kill. The crash-loop policy stays
# knit's (5 crashes of one worker within 10 s make its respawns back off): 2 s apart over two
# workers stays under it; a short gap trips it, and the backoff's queue then shows as 503s from
# admission control (the server shedding load while /readyz says degraded).
set -u
cd "$(dirname "$0")/../.."
KILLS=${1:-100}
GAP_MS=${2:-2000}
RATE=${3:-1000}
SERVER=${4:-build/bin/knit-server}
LOAD=${5:-build/bin/knit-load}
. bench/hostile/common.sh
WORK=$(mktemp -d /tmp/knit-kills-XXXXXX)
trap 'kill $SERVER_PID 2>/dev/null; rm -rf "$WORK"' EXIT
printf '{"name":"Ari","plan":"pro","bio":"Building on Knitting","projects":17}' >"$WORK/ssr.json"
printf '{"user":{"id":"u_42","email":"ari@example.com","role":"admin"},"ttlSec":900}' >"$WORK/jwt.json"
DURATION=$((2 + (KILLS * GAP_MS + 999) / 1000 + 2))

echo "# knit-server: $SERVER  knit-load: $LOAD  ($(git rev-parse --short HEAD 2>/dev/null))"
echo "# $(date -u +%FT%TZ) $(nproc) CPUs; server on CPU 0, knit-load on CPU 1; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $KILLS kills $GAP_MS ms apart; $RATE/s on /ssr and on /jwt, 100/s /ping, ${DURATION}s"

start_server "$WORK/server.log" KNIT_MODE=pooled KNIT_ISOLATION=process KNIT_THREADS=2 \
  KNIT_COST_PROFILE=bun || exit 1
taskset -c 1 "$LOAD" --port "$PORT" --duration "$DURATION" --json "$WORK/load.json" \
  --route ssr:POST:/ssr:32:"$RATE":"$WORK/ssr.json" \
  --route jwt:POST:/jwt:32:"$RATE":"$WORK/jwt.json" \
  --route ping:GET:/ping:4:100 >/dev/null 2>&1 &
LOAD_PID=$!
sleep 2
done_kills=0
while [ "$done_kills" -lt "$KILLS" ]; do
  # The server's live children are its worker processes (knit-proc-N).
  victim=$(ps -o pid=,stat= --ppid "$SERVER_PID" | awk '$2 !~ /^Z/ {print $1}' | shuf -n 1)
  if [ -n "$victim" ] && kill -KILL "$victim" 2>/dev/null; then done_kills=$((done_kills + 1)); fi
  sleep "$(awk -v ms="$GAP_MS" 'BEGIN {printf "%.3f", ms / 1000}')"
done
wait "$LOAD_PID"
S=$(stats "$WORK/server.log")
echo "kills sent: $done_kills"
echo "knit-stats workers: $(json_field "$S" workers)"
python3 - "$WORK/load.json" "$done_kills" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); kills = int(sys.argv[2])
for name in ("ssr", "jwt", "ping"):
    v = r["routes"][name]; s = v["summary"]
    print(f"{name}: {s['requests']} answered, codes {v['statusCodeDistribution']}, "
          f"errors {s['errors']}, timeouts {s['timeouts']}, "
          f"p99 {v['latencyPercentiles']['p99'] * 1000:.2f} ms")
fails = sum(r["routes"][n]["statusCodeDistribution"].get("500", 0) for n in ("ssr", "jwt"))
other = sum(c for n in ("ssr", "jwt") for k, c in r["routes"][n]["statusCodeDistribution"].items()
            if k not in ("200", "500"))
ping_bad = sum(c for k, c in r["routes"]["ping"]["statusCodeDistribution"].items() if k != "200")
ping_bad += r["routes"]["ping"]["summary"]["errors"]
print(f"500s per kill: {fails / kills:.2f} ({fails} over {kills} kills"
      f"); other non-200 heavy: {other}; /ping not 200: {ping_bad}")
PY
grep -c 'worker killed by signal 9' "$WORK/server.log" | sed 's/^/stderr crash lines: /'
stop_server

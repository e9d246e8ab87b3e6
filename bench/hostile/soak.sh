#!/usr/bin/env bash
# Soak: knit-server pooled with 2 workers under ~80% of the inline ceiling for a long run,
# watching for leaks and drift. Loopback only, bounded by DURATION.
#
#   bench/hostile/soak.sh [DURATION_S] [knit-server] [knit-load]
#     defaults: 600 (10 minutes) build/bin/knit-server build/bin/knit-load
#
# Server pinned to CPU 0, knit-load to CPU 1 (taskset). KNIT_COST_PROFILE=bun.
# 1. the inline ceiling: an inline server, knit-load closed loop (64 connections on each of
#    /ssr and /jwt) for 5 s: C = heavy requests answered per second;
# 2. the soak: a pooled server (KNIT_THREADS=2), knit-load open loop at 0.4 C on /ssr and
#    0.4 C on /jwt (0.8 C in all) plus /ping at 100/s, in 60 s segments (the last one
#    shorter): one line per segment with its p99 and errors; every 10 s a sample of the
#    server's VmRSS, open fds and connections;
# 3. SIGTERM at the end: the exit code must be 0.
set -u
cd "$(dirname "$0")/../.."
DURATION=${1:-600}
SERVER=${2:-build/bin/knit-server}
LOAD=${3:-build/bin/knit-load}
HERE=bench/hostile
. $HERE/common.sh
WORK=$(mktemp -d /tmp/knit-soak-XXXXXX)
SAMPLER=
trap 'kill $SAMPLER $SERVER_PID 2>/dev/null; rm -rf "$WORK"' EXIT
printf '{"name":"Ari","plan":"pro","bio":"Building on Knitting","projects":17}' >"$WORK/ssr.json"
printf '{"user":{"id":"u_42","email":"ari@example.com","role":"admin"},"ttlSec":900}' >"$WORK/jwt.json"

echo "# knit-server: $SERVER  knit-load: $LOAD  ($(git rev-parse --short HEAD 2>/dev/null))"
echo "# $(date -u +%FT%TZ) $(nproc) CPUs; server on CPU 0, knit-load on CPU 1; ${DURATION}s"

# 1. The inline ceiling.
start_server "$WORK/inline.log" KNIT_MODE=inline KNIT_COST_PROFILE=bun || exit 1
taskset -c 1 "$LOAD" --port "$PORT" --duration 5 --json "$WORK/ceiling.json" \
  --route ssr:POST:/ssr:64:0:"$WORK/ssr.json" --route jwt:POST:/jwt:64:0:"$WORK/jwt.json" \
  >/dev/null 2>&1
stop_server >/dev/null
C=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))
print(int(sum(v["statusCodeDistribution"].get("200",0) for v in r["routes"].values())/r["duration_s"]))' \
  "$WORK/ceiling.json")
RATE=$((C * 4 / 10))
echo "inline ceiling: $C heavy requests/s; soak rate: $RATE/s on /ssr + $RATE/s on /jwt + 100/s /ping"

# 2. The soak.
start_server "$WORK/server.log" KNIT_MODE=pooled KNIT_THREADS=2 KNIT_COST_PROFILE=bun || exit 1
START=$(date +%s)
(
  while sleep 10; do
    [ -d "/proc/$SERVER_PID" ] || break
    s=$(stats "$WORK/server.log")
    echo "sample t=$(( $(date +%s) - START ))s rss_kb=$(rss_kb) fds=$(fd_count)" \
         "connections=$(json_field "$s" connections) buffered_bytes=$(json_field "$s" buffered_bytes)"
  done
) &
SAMPLER=$!
segment=0
while :; do
  left=$(( DURATION - ( $(date +%s) - START ) ))
  [ "$left" -ge 5 ] || break
  len=$(( left < 60 ? left : 60 ))
  segment=$((segment + 1))
  taskset -c 1 "$LOAD" --port "$PORT" --duration "$len" --json "$WORK/seg.json" \
    --route ssr:POST:/ssr:64:$RATE:"$WORK/ssr.json" \
    --route jwt:POST:/jwt:64:$RATE:"$WORK/jwt.json" \
    --route ping:GET:/ping:4:100 >/dev/null 2>&1
  python3 - "$WORK/seg.json" "$segment" "$len" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
parts = []
for name, v in r["routes"].items():
    s = v["summary"]
    parts.append(f"{name} {s['requestsPerSec']:.0f}/s p99 {v['latencyPercentiles']['p99']*1e3:.2f} ms "
                 f"non2xx {s['non2xx']} errors {s['errors']}")
print(f"minute {sys.argv[2]} ({sys.argv[3]}s): " + "; ".join(parts))
PY
done
kill $SAMPLER 2>/dev/null; wait $SAMPLER 2>/dev/null
echo "final: rss_kb=$(rss_kb) peak=$(hwm_kb) fds=$(fd_count)"
stop_server

#!/usr/bin/env bash
# A flood of 3x the heavy routes' ceiling against knit-server with admission control at its
# defaults (KNIT_MAX_QUEUE_MS=250, KNIT_MAX_QUEUED=4096): how many 503s (with Retry-After),
# the latency of the requests that were accepted, /ping during the flood, and recovery after.
# Loopback only, about 45 s in all. Server pinned to CPU 0, generators to CPU 1 (taskset).
#
#   bench/hostile/flood.sh [knit-server] [knit-load] [flood seconds]
#     defaults: build/bin/knit-server build/bin/knit-load 30
#
# Server: KNIT_MODE=pooled KNIT_THREADS=1 KNIT_COST_PROFILE=bun (ssr 76 us, jwt 72 us of CPU).
# 1. ceiling: knit-load closed loop, 64 connections on each of /ssr and /jwt, 5 s: C = the
#    heavy requests answered per second;
# 2. flood: knit-load open loop at 1.5 C on /ssr and 1.5 C on /jwt (3 C in all), $CONNS
#    (default 2000) connections each (a queue of 250 ms needs more connections than calls fit in 250 ms),
#    plus /ping at 200/s on 8 connections; meanwhile a probe (hostile_client.py probe) sends
#    one /ssr every 10 ms and one /ping every 100 ms on its own connections and keeps going
#    3 s after the flood: accepted-request latency, 503s with Retry-After, recovery.
set -u
cd "$(dirname "$0")/../.."
SERVER=${1:-build/bin/knit-server}
LOAD=${2:-build/bin/knit-load}
FLOOD_S=${3:-30}
CONNS=${CONNS:-2000}  # per heavy route
HERE=bench/hostile
. $HERE/common.sh
WORK=$(mktemp -d /tmp/knit-flood-XXXXXX)
trap 'kill $SERVER_PID 2>/dev/null; rm -rf "$WORK"' EXIT
printf '{"name":"Ari","plan":"pro","bio":"Building on Knitting","projects":17}' >"$WORK/ssr.json"
printf '{"user":{"id":"u_42","email":"ari@example.com","role":"admin"},"ttlSec":900}' >"$WORK/jwt.json"

echo "# knit-server: $SERVER  knit-load: $LOAD  ($(git rev-parse --short HEAD 2>/dev/null))"
echo "# $(date -u +%FT%TZ) $(nproc) CPUs; server on CPU 0, knit-load and probe on CPU 1"
start_server "$WORK/server.log" KNIT_MODE=pooled KNIT_THREADS=1 KNIT_COST_PROFILE=bun || exit 1
echo "rss_kb at start=$(rss_kb)"

# 1. The ceiling.
taskset -c 1 "$LOAD" --port "$PORT" --duration 5 --json "$WORK/ceiling.json" \
  --route ssr:POST:/ssr:64:0:"$WORK/ssr.json" --route jwt:POST:/jwt:64:0:"$WORK/jwt.json" >/dev/null
C=$(python3 - "$WORK/ceiling.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ok = sum(v["statusCodeDistribution"].get("200", 0) for v in r["routes"].values())
print(int(ok / r["duration_s"]))
PY
)
RATE=$((C * 3 / 2))
echo "ceiling: $C heavy requests/s answered 200 (closed loop, 128 connections)"
echo "flood: $RATE/s on /ssr + $RATE/s on /jwt = $((RATE * 2))/s (3x ceiling) for ${FLOOD_S}s"
stats "$WORK/server.log" >"$WORK/stats-before.json"

# 2. The flood, with the probe alongside.
taskset -c 1 python3 $HERE/hostile_client.py probe "$PORT" $((FLOOD_S + 6)) "$WORK/flood-ended" \
  >"$WORK/probe.json" &
PROBE=$!
taskset -c 1 "$LOAD" --port "$PORT" --duration "$FLOOD_S" --json "$WORK/flood.json" \
  --route ssr:POST:/ssr:$CONNS:$RATE:"$WORK/ssr.json" \
  --route jwt:POST:/jwt:$CONNS:$RATE:"$WORK/jwt.json" \
  --route ping:GET:/ping:8:200 >/dev/null 2>"$WORK/flood.err"
touch "$WORK/flood-ended"
echo "rss_kb right after the flood=$(rss_kb) peak=$(hwm_kb)"
wait $PROBE
after=$(stats "$WORK/server.log")

python3 - "$WORK/flood.json" "$WORK/probe.json" "$WORK/stats-before.json" "$after" <<'PY'
import json, sys
flood = json.load(open(sys.argv[1]))
probe = json.load(open(sys.argv[2]))
before = json.load(open(sys.argv[3]))
after = json.loads(sys.argv[4])
for name, r in flood["routes"].items():
    s = r["summary"]
    p = r["latencyPercentiles"]
    u = r.get("uncorrectedLatencyPercentiles", p)
    rate = r.get("rate", {})
    print(f"{name}: target {rate.get('target')}/s achieved {rate.get('achieved', 0):.0f}/s "
          f"(met: {rate.get('met')}), completed {s['requestsPerSec']:.0f}/s, "
          f"status {r['statusCodeDistribution']}, errors {r['errorDistribution']}, "
          f"all statuses: p50 {u['p50']*1e3:.2f} ms p99 {u['p99']*1e3:.2f} ms from the actual send, "
          f"p99 {p['p99']*1e3:.1f} ms from the intended send")
rej = {k: after["rejected"][k] - before["rejected"][k] for k in after["rejected"]}
print("server rejected during the flood (knit-stats):", rej)
print("probe:", json.dumps(probe))
PY
echo "rss_kb at the end=$(rss_kb) peak=$(hwm_kb)"
stop_server

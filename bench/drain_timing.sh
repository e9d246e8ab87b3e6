#!/usr/bin/env bash
# drain_timing.sh: what SIGTERM does to an idle knit-server, timed from outside: how long until
# /readyz stops answering 200, what /ping gets right then, and when the process exits.
#
# usage: bench/drain_timing.sh [server-binary] [KNIT_DRAIN_DELAY_MS] [port]
# Expected: /readyz 503 within a few ms, /ping 200 during the delay (000: refused, when the
# delay is 0 and the stop has already closed the listener), exit code 0 just after the delay.
set -euo pipefail
SERVER=${1:-build/bin/knit-server}
DELAY=${2:-2000}
PORT=${3:-3918}
command -v curl >/dev/null || { echo "drain_timing.sh: curl is not installed" >&2; exit 2; }
if ss -ltn "sport = :$PORT" | grep -q LISTEN; then echo "drain_timing.sh: port $PORT is in use" >&2; exit 2; fi
log=$(mktemp)
trap 'rm -f "$log"; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true' EXIT
PORT=$PORT KNIT_DRAIN_DELAY_MS=$DELAY KNIT_MODE=pooled JWT_SECRET=drain-timing "$SERVER" >"$log" 2>&1 &
pid=$!
for _ in $(seq 200); do curl -s -o /dev/null "127.0.0.1:$PORT/readyz" && break; sleep 0.05; done
t0=$(date +%s%N)
kill -TERM "$pid"
while [ "$(curl -s -o /dev/null -w '%{http_code}' "127.0.0.1:$PORT/readyz")" = 200 ]; do :; done
t1=$(date +%s%N)
ping=$(curl -s -o /dev/null -w '%{http_code}' "127.0.0.1:$PORT/ping" || true)
rc=0
wait "$pid" || rc=$?
t2=$(date +%s%N)
pid=
echo "KNIT_DRAIN_DELAY_MS=$DELAY: /readyz not 200 after $(( (t1 - t0) / 1000000 )) ms;" \
     "/ping then: $ping; exit code $rc after $(( (t2 - t0) / 1000000 )) ms"

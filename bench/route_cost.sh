#!/usr/bin/env bash
# route_cost.sh: per-route cost in isolation, inline mode: wrk drives one route at a time
# against knit-server and we read the server's CPU time from /proc/PID/schedstat (ns)
# around the window. Prints CPU-µs per request and rps per route.
#
# usage: bench/route_cost.sh [server-binary] [duration-s] [connections]
# Layout: server on CPU 0, wrk on CPU 1 (where there are 2+ CPUs). The server is started
# by this script (its PID is $!, no shell in between), the port is checked free first,
# and it is stopped by PID.
set -euo pipefail
SERVER=${1:-build/bin/knit-server}
DUR=${2:-5}
CONNS=${3:-50}
PORT=${PORT:-3917}
command -v wrk >/dev/null || { echo "route_cost.sh: wrk is not installed (apt-get install wrk)" >&2; exit 2; }
if ss -ltn "sport = :$PORT" | grep -q LISTEN; then echo "route_cost.sh: port $PORT is in use" >&2; exit 2; fi
ncpu=$(nproc)
srv_cpu=0; gen_cpu=$(( ncpu > 1 ? 1 : 0 ))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true' EXIT
cat > "$tmp/ssr.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"name":"Ari","plan":"pro","bio":"Building on Knitting","projects":17}'
wrk.headers["content-type"] = "application/json"
LUA
cat > "$tmp/jwt.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"user":{"id":"u_42","email":"ari@example.com","role":"admin"},"ttlSec":900}'
wrk.headers["content-type"] = "application/json"
LUA
: > "$tmp/none.lua"

cpu_ns() { local t s=0; for t in /proc/"$1"/task/*/schedstat; do s=$((s + $(cut -d' ' -f1 "$t"))); done; echo "$s"; }

env -i PATH="$PATH" PORT=$PORT KNIT_MODE=inline KNIT_COST_PROFILE=${KNIT_COST_PROFILE:-native} JWT_SECRET=x \
  taskset -c $srv_cpu "$SERVER" > "$tmp/server.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do grep -q "listening on" "$tmp/server.log" && break; sleep 0.05; done
grep -q "listening on" "$tmp/server.log" || { echo "route_cost.sh: server did not start" >&2; cat "$tmp/server.log" >&2; exit 1; }
[ "$(readlink /proc/$pid/exe)" = "$(readlink -f "$SERVER")" ] || { echo "route_cost.sh: PID $pid is not $SERVER" >&2; exit 1; }

echo "server: $SERVER inline, profile ${KNIT_COST_PROFILE:-native}, CPU $srv_cpu; wrk -t1 -c$CONNS -d${DUR}s on CPU $gen_cpu"
printf '%-6s %10s %14s\n' route rps cpu_us_per_req
for route in ping ssr jwt; do
  script=$tmp/none.lua; [ $route != ping ] && script=$tmp/$route.lua
  taskset -c $gen_cpu wrk -t1 -c"$CONNS" -d1s -s "$script" "http://127.0.0.1:$PORT/$route" > /dev/null  # warm-up
  c0=$(cpu_ns $pid)
  out=$(taskset -c $gen_cpu wrk -t1 -c"$CONNS" -d"${DUR}s" -s "$script" "http://127.0.0.1:$PORT/$route")
  c1=$(cpu_ns $pid)
  reqs=$(echo "$out" | awk '/requests in/{print $1}')
  non2xx=$(echo "$out" | awk '/Non-2xx/{print $NF}')
  [ -n "$non2xx" ] && { echo "route_cost.sh: $route answered $non2xx non-2xx responses" >&2; exit 1; }
  awk -v r=$route -v n="$reqs" -v d="$DUR" -v c=$((c1 - c0)) 'BEGIN{printf "%-6s %10.0f %14.2f\n", r, n/d, c/1000/n}'
done
kill -TERM $pid; wait $pid || true; pid=

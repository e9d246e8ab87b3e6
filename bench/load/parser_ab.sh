#!/usr/bin/env bash
# parser_ab.sh: knit-load's own ceiling with two builds of it, interleaved A B A B in one
# run: its rps and its CPU per response against a cheap server (nginx-light answering
# /ping with a 2-byte static body, one worker). The rps is knit-load's top only where the
# server outruns it; the CPU per response compares the two builds either way. Used to
# choose knit-load's response parser (Beast's basic_parser or the hand-written one) and to
# check knit-load's top before and after a change (bench/results/knit-load-top).
#
#   bench/load/parser_ab.sh OLD_KNIT_LOAD NEW_KNIT_LOAD [ROUNDS] [SECONDS] [CONNS]
#     defaults: 5 rounds of 5 s, 64 connections on one route
#
# Layout: nginx pinned to CPU 0, knit-load (--threads 1) to CPU 1 (taskset). Each line is
# one window: rps = successes / window, cpu_us = knit-load's user+sys CPU (gen_cpu_s) per
# response, and the machine's busy cores from /proc/stat over the window (everything, the
# two processes included): on a shared machine the figures are indicative only.
set -euo pipefail
OLD=${1:?old knit-load}
NEW=${2:?new knit-load}
ROUNDS=${3:-5}
SECONDS_PER=${4:-5}
CONNS=${5:-64}
command -v nginx >/dev/null || { echo "parser_ab.sh: nginx not on PATH (nginx-light)" >&2; exit 2; }

dir=$(mktemp -d)
nginx_pid=
cleanup() {
  [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$dir/nginx.conf" <<CONF
worker_processes 1;
daemon off;
master_process off;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $dir;
  proxy_temp_path $dir;
  fastcgi_temp_path $dir;
  uwsgi_temp_path $dir;
  scgi_temp_path $dir;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$port;
    location = /ping { default_type text/plain; return 200 "ok"; }
  }
}
CONF
taskset -c 0 nginx -p "$dir" -c "$dir/nginx.conf" &
nginx_pid=$!
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$port/ping" >/dev/null 2>&1 && break
  sleep 0.1
done

busy() { awk '/^cpu /{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat; }

echo "# $(date -u +%FT%TZ) $(nproc) CPUs; nginx on CPU 0, knit-load on CPU 1;" \
     "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# old: $OLD  new: $NEW  rounds $ROUNDS x ${SECONDS_PER}s, $CONNS connections"
printf '%-4s %-5s %10s %8s %10s\n' round build rps cpu_us busy_cores
for r in $(seq "$ROUNDS"); do
  for which in old new; do
    bin=$OLD
    [ "$which" = new ] && bin=$NEW
    read -r b0 t0 < <(busy)
    taskset -c 1 "$bin" --port "$port" --duration "$SECONDS_PER" --threads 1 --json "$dir/out.json" \
      --route "ping:GET:/ping:$CONNS" >/dev/null 2>&1
    read -r b1 t1 < <(busy)
    python3 - "$dir/out.json" "$r" "$which" "$b0" "$t0" "$b1" "$t1" "$(nproc)" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
r = j["routes"][0] if isinstance(j.get("routes"), list) else list(j["routes"].values())[0]
ok = r["summary"]["successes"]
win = j["duration_s"]
b0, t0, b1, t1, n = map(float, sys.argv[4:9])
busy = (b1 - b0) / (t1 - t0) * n if t1 > t0 else 0
print(f"{sys.argv[2]:<4} {sys.argv[3]:<5} {ok / win:10.0f} {j['gen_cpu_s'] / max(ok, 1) * 1e6:8.2f} {busy:10.2f}")
PY
  done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# slowhttptest (Debian package slowhttptest) against knit-server and nginx with the same
# flags: slowloris headers (-H), slow body (-B), slow read (-X) and range (-R). For each
# run: slowhttptest's own verdict (its CSV's "Service Available" column, one row a second,
# 0 = its probe connection got no answer within -p seconds; and its exit status line), and
# the server's open fds and RSS sampled every 0.5 s during the run (peak).
#
# usage: bench/hostile/slowhttptest.sh [knit-server] [seconds per run] [connections]
#        (defaults: build/bin/knit-server 30 500)
# env:   OUT=dir (keeps every CSV, HTML and log there; default a temp dir, removed)
#        ONLY="knit nginx" (targets), MODES="H B X R"
#        BOUNDED=1: also fail a knit-server run whose fds grew by more than the connections
#        + 8 (the probe's, a listener's) or whose RSS grew by more than the README's
#        worst case per connection (0.93 MiB) x connections (tests/server's short run);
#        BOUNDED=fds: the fds alone (a sanitizer build, whose RSS says nothing)
# Prints a markdown table; the exit code is 0 when every knit-server run kept the service
# available throughout and answered /ping after it (nginx's verdicts are reported, not
# judged), 77 when a tool is missing.
#
# nginx (nginx-light) runs from a temporary config on a free 127.0.0.1 port, one worker
# process, serving the same paths as static files of the same sizes as knit's answers (/ping;
# /metrics for the slow read, repeated -k times per connection). Both servers are killed by
# PID on every exit path; nothing listens beyond 127.0.0.1.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SERVER=$(readlink -f "${1:-build/bin/knit-server}")
SECS=${2:-30}
CONNS=${3:-500}
ONLY=${ONLY:-knit nginx}
MODES=${MODES:-H B X R}
for tool in slowhttptest nginx curl; do
  command -v "$tool" >/dev/null || { echo "slowhttptest.sh: $tool not on PATH (./knit deps)" >&2; exit 77; }
done
[ -x "$SERVER" ] || { echo "slowhttptest.sh: no knit-server at $SERVER" >&2; exit 1; }

work=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/knit-slowhttp.XXXXXX")}
mkdir -p "$work"
pid=
cleanup() {
  [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null
  [ -n "${OUT:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_free() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# The same flags for both servers, per mode: -c connections at -r a second, follow-up data
# every -i s, probe timeout -p s, run -l s.
common=(-c "$CONNS" -r 200 -i 5 -p 3 -l "$SECS" -g)
flags_for() {  # flags_for MODE URL_BASE
  case "$1" in
    H) echo -H "${common[*]}" -u "$2/ping" ;;
    B) echo -B "${common[*]}" -s 8192 -u "$2/jwt" -t POST ;;
    X) echo -X "${common[*]}" -k 10 -n 1 -w 1 -y 32 -z 32 -u "$2/metrics" ;;
    R) echo -R "${common[*]}" -a 5 -b 2000 -u "$2/ping" ;;
  esac
}

start_knit() {
  local port
  port=$(port_free)
  env PORT="$port" HOST=127.0.0.1 JWT_SECRET=slowhttptest "$SERVER" >"$work/knit.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do
    grep -q '^listening on' "$work/knit.log" 2>/dev/null && { url=http://127.0.0.1:$port; return 0; }
    sleep 0.1
  done
  echo "knit-server did not start:" >&2; cat "$work/knit.log" >&2; return 1
}

# nginx serves knit's /ping and /metrics bodies as files, and answers POST /jwt (the slow
# body's target) with 200 once it has the body, like knit.
start_nginx() {
  local port www=$work/www
  port=$(port_free)
  mkdir -p "$www" "$work/nginx-tmp"
  printf '{"pong":true}' >"$www/ping"
  # A /metrics of the size knit's page has (fetched from a knit-server run before nginx's).
  head -c "${metrics_bytes:-12000}" /dev/zero | tr '\0' 'x' >"$www/metrics"
  cat >"$work/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/nginx-tmp/body;
  proxy_temp_path $work/nginx-tmp/proxy;
  fastcgi_temp_path $work/nginx-tmp/fastcgi;
  uwsgi_temp_path $work/nginx-tmp/uwsgi;
  scgi_temp_path $work/nginx-tmp/scgi;
  default_type application/json;
  server {
    listen 127.0.0.1:$port;
    root $www;
    location = /jwt { client_max_body_size 64k; error_page 405 =200 /ping; }
  }
}
EOF
  # ulimit: nginx's worker_connections need the fds; knit-server raises its own limit.
  (ulimit -n 8192 2>/dev/null; exec nginx -c "$work/nginx.conf") >"$work/nginx.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do
    curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$port/ping" && { url=http://127.0.0.1:$port; return 0; }
    sleep 0.1
  done
  echo "nginx did not start:" >&2; cat "$work/nginx.log" "$work/nginx-error.log" >&2; return 1
}

# sample PID FILE: "fds rss_kb" every 0.5 s while PID lives and until killed.
sample() {
  while [ -d "/proc/$1" ]; do
    printf '%s %s\n' "$(ls "/proc/$1/fd" 2>/dev/null | wc -l)" \
      "$(awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null)" >>"$2"
    sleep 0.5
  done
}

rows=()
failed=0
for target in $ONLY; do
  for mode in $MODES; do
    pid=
    case "$target" in
      knit) start_knit || exit 1
            metrics_bytes=$(curl -s --max-time 5 "$url/metrics" | wc -c) ;;
      nginx) start_nginx || exit 1 ;;
    esac
    base_fds=$(ls "/proc/$pid/fd" | wc -l)
    base_rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
    : >"$work/$target-$mode.samples"
    sample "$pid" "$work/$target-$mode.samples" &
    sampler=$!
    # shellcheck disable=SC2046  # word splitting of the flags is meant
    timeout $((SECS + 60)) slowhttptest $(flags_for "$mode" "$url") -o "$work/$target-$mode" \
      >"$work/$target-$mode.out" 2>&1
    st=$?
    # Still answering after the attack?
    after=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$url/ping")
    kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
    kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=
    csv=$work/$target-$mode.csv
    if [ ! -s "$csv" ]; then
      rows+=("| $target | -$mode | slowhttptest exit $st, no CSV | | | | |")
      [ "$target" = knit ] && failed=1
      continue
    fi
    # Rows after the header: seconds, closed, pending, connected, service available (0: no).
    read -r secs down peak_conn <<<"$(awk -F, 'NR>1 {n++; if ($5==0) d++; if ($4>p) p=$4}
      END {print n+0, d+0, p+0}' "$csv")"
    exit_line=$(sed 's/\x1b\[[0-9;]*m//g' "$work/$target-$mode.out" | sed -n 's/^Exit status: *//p' | tail -1)
    read -r peak_fds peak_rss <<<"$(awk '{if ($1>f) f=$1; if ($2>r) r=$2} END {print f+0, r+0}' \
      "$work/$target-$mode.samples")"
    verdict="available ${secs} s of ${secs} s"
    [ "$down" -eq 0 ] || verdict="**unavailable ${down} s of ${secs} s**"
    rows+=("| $target | -$mode | $verdict | $exit_line | $peak_conn | $base_fds → $peak_fds | $((base_rss / 1024)) → $((peak_rss / 1024)) | $after |")
    if [ "$target" = knit ] && { [ "$down" -ne 0 ] || [ "$after" != 200 ]; }; then failed=1; fi
    if [ "$target" = knit ] && [ -n "${BOUNDED:-}" ]; then
      if [ $((peak_fds - base_fds)) -gt $((CONNS + 8)) ]; then
        echo "knit -$mode: fds grew $base_fds -> $peak_fds, more than $CONNS connections + 8" >&2
        failed=1
      fi
      if [ "$BOUNDED" != fds ] && [ $((peak_rss - base_rss)) -gt $((CONNS * 952)) ]; then
        echo "knit -$mode: RSS grew $base_rss -> $peak_rss kB, more than $CONNS x 0.93 MiB" >&2
        failed=1
      fi
      # A run ends early when the server has answered and closed every connection (-R: knit
      # answers a range request with the whole 200 at once), so one row is a verdict too.
      if [ "$secs" -lt 1 ]; then
        echo "knit -$mode: slowhttptest's CSV has no row: no verdict" >&2
        failed=1
      fi
    fi
  done
done

echo "slowhttptest $(slowhttptest -h 2>&1 | sed -n 's/.*version //p' | head -1), nginx $(nginx -v 2>&1 | sed 's/.*nginx\///'), $SECS s per run, $CONNS connections"
echo "flags: common ${common[*]}; -H /ping; -B -s 8192 POST /jwt; -X -k 10 -n 1 -w 1 -y 32 -z 32 /metrics; -R -a 5 -b 2000 /ping"
echo
echo "| server | mode | slowhttptest's verdict (probe answered within 3 s, per second) | exit status | peak connected | fds (start → peak) | RSS MB (start → peak) | /ping after |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit "$failed"

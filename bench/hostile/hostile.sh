#!/usr/bin/env bash
# Hostile shapes against knit-server, with the server's RSS (VmRSS, /proc/PID/status) before
# and after each. Loopback only; every client is bounded in bytes and time (about 1 minute
# in all). The server runs pinned to CPU 0, the clients to CPU 1.
#
#   bench/hostile/hostile.sh [path/to/knit-server]   (default build/bin/knit-server)
#
# 1. unending chunked lines (extension, trailer, endless 0 digits): the client offers up to
#    48 MiB and stops when the server answers or closes;
# 2. amplified /ssr: 200 keep-alive connections each get a ~780 KB page for a 64 KiB name of
#    apostrophes, then stay idle;
# 3. slow clients at the connection cap: KNIT_MAX_CONNECTIONS=200, each sending an unfinished
#    8000-byte header and then 1 byte/s; one more connection is turned away.
set -u
cd "$(dirname "$0")/../.."
SERVER=${1:-build/bin/knit-server}
HERE=bench/hostile
. $HERE/common.sh
CLIENT="taskset -c 1 python3 $HERE/hostile_client.py"
LOG=$(mktemp /tmp/knit-hostile-XXXXXX.log)
trap 'kill $SERVER_PID 2>/dev/null; rm -f "$LOG"' EXIT

echo "# knit-server: $SERVER ($(git rev-parse --short HEAD 2>/dev/null))"
echo "# $(date -u +%FT%TZ) $(nproc) CPUs; server on CPU 0, clients on CPU 1"

echo "## 1. unending chunked lines (KNIT_MODE=pooled, defaults)"
start_server "$LOG" KNIT_MODE=pooled || exit 1
for shape in extension trailer zeros; do
  before=$(rss_kb)
  result=$($CLIENT unending "$PORT" "$shape" $((48 * 1024 * 1024)))
  echo "$shape: rss_kb before=$before after=$(rss_kb) peak=$(hwm_kb) client: $result"
done
echo "stats: $(stats "$LOG")"
stop_server

echo "## 2. amplified /ssr on 200 idle keep-alive connections (KNIT_MODE=pooled)"
start_server "$LOG" KNIT_MODE=pooled || exit 1
before=$(rss_kb)
coproc AMP { $CLIENT amplify "$PORT" 200; }
read -r -t 120 line <&"${AMP[0]}"
sleep 0.5
s=$(stats "$LOG")
echo "rss_kb before=$before with 200 idle connections=$(rss_kb) peak=$(hwm_kb) client: $line"
echo "connections=$(json_field "$s" connections) buffered_bytes=$(json_field "$s" buffered_bytes)"
exec {AMP[1]}>&-
wait "$AMP_PID" 2>/dev/null
sleep 0.5
echo "rss_kb after the clients left=$(rss_kb)"
stop_server

echo "## 3. slow clients at the connection cap (KNIT_MAX_CONNECTIONS=200, KNIT_IDLE_TIMEOUT_MS=5000)"
start_server "$LOG" KNIT_MODE=pooled KNIT_MAX_CONNECTIONS=200 KNIT_IDLE_TIMEOUT_MS=5000 || exit 1
before=$(rss_kb)
coproc SLOW { $CLIENT slow "$PORT" 200 8000; }
read -r -t 60 line <&"${SLOW[0]}"
sleep 1
s=$(stats "$LOG")
echo "rss_kb before=$before with 200 slow clients=$(rss_kb) client: $line"
echo "connections=$(json_field "$s" connections) buffered_bytes=$(json_field "$s" buffered_bytes)"
extra=$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://127.0.0.1:$PORT/ping")
echo "one more connection at the cap: /ping -> http_code $extra (000 = closed by the server)"
sleep 7  # the idle timeout (5 s) plus a sweep drops the slow clients
after=$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "http://127.0.0.1:$PORT/ping")
s=$(stats "$LOG")
echo "after the idle timeout: connections=$(json_field "$s" connections) /ping -> $after rss_kb=$(rss_kb)"
exec {SLOW[1]}>&-
wait "$SLOW_PID" 2>/dev/null
stop_server

#!/usr/bin/env bash
# Slow readers of the largest page against knit-server's write budget (KNIT_MEMORY_BUDGET_MB,
# docs/server-safety.md): N connections each POST /ssr with a 64 KiB name of apostrophes
# (a 787 KB page) and never read it. Every second it prints the server's RSS, the kernel's
# TCP memory (/proc/net/sockstat "TCP: mem", pages x 4096), the part of it in the server's
# send queues and in the clients' receive queues (ss -tm: wmem_queued of the server's
# sockets, rmem_alloc of the clients'), the budget's parked_bytes (knit-stats), and what a
# fresh /ssr and /ping get. After KNIT_IDLE_TIMEOUT_MS the stalled writes are reset; the
# script reports how many the clients saw reset and when /ssr answered 200 again.
# Loopback only. The server runs pinned to CPU 0, the clients and probes to CPU 1.
#
#   bench/hostile/slow_readers.sh [knit-server] [N ...] [-- VAR=value ...]
#     default: build/bin/knit-server 1500 3000, KNIT_IDLE_TIMEOUT_MS=5000, the default budget,
#     KNIT_MODE=pooled with KNIT_MAX_QUEUE_MS=0 (admission's delay rule off: rendering 1,500
#     pages of 787 KB on one worker would otherwise have admission shed most of them first,
#     and this measures the budget)
#   e.g. bench/hostile/slow_readers.sh build/bin/knit-server 1500 -- KNIT_MEMORY_BUDGET_MB=256
set -u
cd "$(dirname "$0")/../.."
SERVER=${1:-build/bin/knit-server}
shift || true
COUNTS=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do COUNTS+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
EXTRA=("$@")
[ ${#COUNTS[@]} -eq 0 ] && COUNTS=(1500 3000)
HERE=bench/hostile
. $HERE/common.sh
LOG=$(mktemp /tmp/knit-slow-readers-XXXXXX.log)
trap 'kill $SERVER_PID 2>/dev/null; rm -f "$LOG"' EXIT
IDLE_MS=5000
for v in "${EXTRA[@]}"; do case $v in KNIT_IDLE_TIMEOUT_MS=*) IDLE_MS=${v#*=} ;; esac; done
SSR_SMALL='{"name":"probe"}'

tcp_mem_bytes() { awk '/^TCP:/ {for (i = 1; i <= NF; i++) if ($i == "mem") print $(i + 1) * 4096}' /proc/net/sockstat; }
# skmem_sum FIELD FILTER: the sum of one skmem field (w: wmem_queued, r: rmem_alloc) over the
# established sockets that match the ss filter.
skmem_sum() {
  ss -tmnH state established "$2" 2>/dev/null |
    grep -o "skmem:([^)]*)" | sed 's/skmem:(//; s/)//' | tr ',' '\n' |
    awk -v f="$1" '{ if (match($0, "^" f "[0-9]+$")) s += substr($0, length(f) + 1) } END { print s + 0 }'
}
code_of() { taskset -c 1 curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$@"; }

echo "# knit-server: $SERVER ($(git rev-parse --short HEAD 2>/dev/null))"
echo "# $(date -u +%FT%TZ) $(nproc) CPUs; server on CPU 0, clients on CPU 1; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# settings: KNIT_MODE=pooled KNIT_MAX_QUEUE_MS=0 KNIT_IDLE_TIMEOUT_MS=$IDLE_MS ${EXTRA[*]}"

for n in "${COUNTS[@]}"; do
  echo "## $n slow readers of the largest page"
  start_server "$LOG" KNIT_MODE=pooled KNIT_MAX_QUEUE_MS=0 KNIT_IDLE_TIMEOUT_MS="$IDLE_MS" \
    "${EXTRA[@]}" || exit 1
  grep '^memory budget' "$LOG"
  mem0=$(tcp_mem_bytes)
  echo "before: rss_kb=$(rss_kb) tcp_mem_bytes=$mem0"
  coproc STALL { taskset -c 1 python3 $HERE/hostile_client.py stall "$PORT" "$n"; }
  t0=$(date +%s.%N)
  echo "t_s rss_kb tcp_mem_bytes(+since_before) server_sendq_bytes client_recvq_bytes parked_bytes connections shed ssr ping"
  sent_at="" first_ok="" shed_seen=0 peak_rss=0 peak_mem=0
  for i in $(seq 1 $((IDLE_MS / 1000 + 40))); do
    if [ -z "$sent_at" ] && read -r -t 0.01 line <&"${STALL[0]}"; then
      sent_at=$(date +%s.%N)
      echo "# clients: $line at t=$(echo "$sent_at - $t0" | bc -l | xargs printf '%.1f') s"
    fi
    s=$(stats "$LOG")
    rss=$(rss_kb); mem=$(tcp_mem_bytes)
    sq=$(skmem_sum w "sport = :$PORT"); rq=$(skmem_sum r "dport = :$PORT")
    ssr=$(code_of -X POST -H 'Content-Type: application/json' -d "$SSR_SMALL" "http://127.0.0.1:$PORT/ssr")
    ping=$(code_of "http://127.0.0.1:$PORT/ping")
    t=$(echo "$(date +%s.%N) - $t0" | bc -l | xargs printf '%.1f')
    echo "$t $rss $mem(+$((mem - mem0))) $sq $rq $(json_field "$s" parked_bytes) $(json_field "$s" connections) $(json_field "$s" rejected.write_budget) $ssr $ping"
    [ "$rss" -gt "$peak_rss" ] && peak_rss=$rss
    [ $((mem - mem0)) -gt "$peak_mem" ] && peak_mem=$((mem - mem0))
    [ "$ssr" = 503 ] && shed_seen=1
    if [ -n "$sent_at" ] && [ "$shed_seen" = 1 ] && [ "$ssr" = 200 ] && [ -z "$first_ok" ]; then
      first_ok=$(date +%s.%N)
    fi
    # Done once the stalled writes are gone (past the idle timeout) and, if /ssr was shed,
    # it has answered 200 again.
    if [ -n "$sent_at" ] && [ "$(json_field "$s" parked_bytes)" = 0 ] &&
      [ "$(echo "$(date +%s.%N) - $sent_at > $IDLE_MS / 1000" | bc -l)" = 1 ] &&
      { [ -n "$first_ok" ] || [ "$shed_seen" = 0 ]; }; then
      break
    fi
    sleep 0.5
  done
  exec {STALL[1]}>&-
  read -r -t 30 line <&"${STALL[0]}" && echo "# clients, when told to look: $line"
  wait "$STALL_PID" 2>/dev/null
  echo "peak: rss_kb=$peak_rss (VmHWM $(hwm_kb)) tcp_mem_bytes +$peak_mem over before"
  if [ -n "$first_ok" ] && [ -n "$sent_at" ]; then
    echo "recovery: first /ssr 200 after shedding $(echo "$first_ok - $sent_at" | bc -l | xargs printf '%.1f') s after the last stalled request was sent (idle timeout $((IDLE_MS / 1000)) s + one sweep)"
  else
    echo "recovery: no /ssr 200 after shedding was seen (shed_seen=$shed_seen)"
  fi
  sleep 1
  echo "after the clients closed: rss_kb=$(rss_kb) tcp_mem_bytes=$(tcp_mem_bytes)"
  stop_server
done

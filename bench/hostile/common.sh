# Shared by the bench/hostile scripts: start knit-server pinned to CPU 0, read its RSS and
# knit-stats, stop it. Source it; set SERVER (path to knit-server) first.

port_free() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_server LOGFILE [VAR=value ...]: sets SERVER_PID and PORT; waits for "listening on".
start_server() {
  local log=$1; shift
  PORT=$(port_free)
  env PORT="$PORT" HOST=127.0.0.1 JWT_SECRET=bench "$@" taskset -c 0 "$SERVER" >"$log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 100); do
    grep -q '^listening on' "$log" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "server did not start:"; cat "$log"; return 1
}

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$SERVER_PID/status"; }
hwm_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$SERVER_PID/status"; }
fd_count() { ls "/proc/$SERVER_PID/fd" | wc -l; }

# stats LOGFILE: the knit-stats JSON printed for one SIGUSR1.
stats() {
  local log=$1 before
  before=$(grep -c '^knit-stats' "$log")
  kill -USR1 "$SERVER_PID"
  for _ in $(seq 1 50); do
    [ "$(grep -c '^knit-stats' "$log")" -gt "$before" ] && break
    sleep 0.1
  done
  grep '^knit-stats' "$log" | tail -1 | sed 's/^knit-stats //'
}

# json_field JSON PATH.TO.FIELD
json_field() { python3 -c 'import json,sys; v=json.loads(sys.argv[1])
for k in sys.argv[2].split("."): v=v[k]
print(v)' "$1" "$2"; }

stop_server() {
  kill -TERM "$SERVER_PID" 2>/dev/null
  local rc=0
  wait "$SERVER_PID" || rc=$?
  echo "server exit code: $rc"
}

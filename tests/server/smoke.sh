#!/usr/bin/env bash
# Smoke test for knit-server: start it on a free port, curl every route, check the status
# codes, print one knit-stats line, stop it by PID and check it exits 0.
#
# usage: tests/server/smoke.sh [path/to/knit-server]      (default: build/bin/knit-server)
# The server's own variables pass through, e.g.  KNIT_MODE=inline tests/server/smoke.sh
set -uo pipefail

BIN=${1:-build/bin/knit-server}
if [ ! -x "$BIN" ]; then
  echo "smoke: no executable at $BIN; build it first: cmake --build build --target knit-server" >&2
  exit 1
fi
command -v curl >/dev/null || { echo "smoke: curl is not installed" >&2; exit 1; }

WORK=$(mktemp -d)
PID=""
cleanup() {
  # Kill by the PID we started, never by name: another knit-server may be running.
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then kill -KILL "$PID" 2>/dev/null; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# PORT=0: the kernel picks a free port and the server prints the one it got.
PORT=0 JWT_SECRET=${JWT_SECRET:-smoke-test-secret} "$BIN" >"$WORK/out" 2>"$WORK/err" &
PID=$!

for _ in $(seq 1 100); do
  grep -q '^listening on ' "$WORK/out" && break
  if ! kill -0 "$PID" 2>/dev/null; then
    echo "smoke: the server exited before listening:" >&2
    cat "$WORK/err" >&2
    exit 1
  fi
  sleep 0.1
done
URL=$(sed -n 's/^listening on //p' "$WORK/out")
if [ -z "$URL" ]; then echo "smoke: no 'listening on' line after 10 s" >&2; exit 1; fi
cat "$WORK/out"

failures=0
# check EXPECTED_STATUS curl-arguments...
check() {
  local expected=$1; shift
  local got
  got=$(curl -s -o "$WORK/body" -w '%{http_code}' --max-time 10 "$@")
  if [ "$got" = "$expected" ]; then
    printf 'ok    %s  %s\n' "$got" "$*"
  else
    printf 'FAIL  expected %s, got %s: %s\n' "$expected" "$got" "$*"
    failures=$((failures + 1))
  fi
}

JSON='content-type: application/json'
check 200 "$URL/ping"
check 200 "$URL/ping?with=query"
check 200 -X POST -H "$JSON" -d '{"name":"Ari","plan":"pro","bio":"Building on Knitting","projects":17}' "$URL/ssr"
check 200 -X POST -H "$JSON" -d '{"user":{"id":"u_42","email":"ari@example.com","role":"admin"},"ttlSec":900}' "$URL/jwt"
check 400 -X POST -H "$JSON" -d 'not json' "$URL/jwt"
check 404 "$URL/nope"
check 404 "$URL/ssr"            # GET on a POST route: Hono answers 404
check 404 -X POST "$URL/ping"   # and so on the other way round

# One stats line on SIGUSR1.
kill -USR1 "$PID"
for _ in $(seq 1 50); do grep -q '^knit-stats ' "$WORK/out" && break; sleep 0.1; done
if grep -q '^knit-stats ' "$WORK/out"; then
  grep '^knit-stats ' "$WORK/out"
else
  echo "FAIL  no knit-stats line after SIGUSR1"; failures=$((failures + 1))
fi

# Graceful stop: SIGTERM, exit code 0.
kill -TERM "$PID"
rc=0
wait "$PID" || rc=$?
PID=""
if [ "$rc" -ne 0 ]; then
  echo "FAIL  exit code $rc after SIGTERM"; failures=$((failures + 1))
  cat "$WORK/err"
else
  echo "ok    exit code 0 after SIGTERM"
fi

if [ "$failures" -ne 0 ]; then echo "smoke: $failures check(s) failed"; exit 1; fi
echo "smoke: all checks passed"

#!/usr/bin/env bash
# A slow call lends a worker instead of refusing the calls behind it (issue 34): a real
# knit-server (pooled, KNIT_THREADS=1, two event loops) pinned to CPU 0, the client on CPU 1,
# loopback only. Prints each latency; exits 1 if a check fails. Under 1 minute.
#   A. a 3 s /ssr on the only worker: ten /jwt sent beside it, one after another on fresh
#      connections, are each answered 200 within 0.5 s; the /ssr itself gets 200.
#   B. KNIT_STUCK_MS=500 and a /ssr of 10 s: three /jwt beside it get 200, the /ssr gets 504
#      at its limit, alone; the /jwt after it get 200.
# Usage: bench/tools/lend_a_worker.sh [path/to/knit-server]   (default build/bin/knit-server)
set -euo pipefail
cd "$(dirname "$0")/../.."
server=$(realpath "${1:-build/bin/knit-server}")
port=${LEND_PORT:-18734}
pid=

stop_server() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  pid=
}
trap stop_server EXIT

start_server() {  # extra KNIT_* assignments as arguments
  env -i PATH="$PATH" PORT="$port" KNIT_MODE=pooled KNIT_HOSTS=2 KNIT_THREADS=1 "$@" \
    taskset -c 0 "$server" >/tmp/lend-a-worker.$$.out 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    if (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "knit-server did not listen:"; cat /tmp/lend-a-worker.$$.out; exit 1
}

client() {  # $1: scenario (a or b)
  taskset -c 1 python3 - "$port" "$1" <<'PY'
import socket, sys, time
port, scenario = int(sys.argv[1]), sys.argv[2]
SSR = b'{"name":"Ari","plan":"pro","bio":"x","projects":1}'
JWT = b'{"user":{"id":"u_42","email":"ari@example.com","role":"admin"},"ttlSec":900}'

def send(path, body):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n%s" % (path.encode(), len(body), body))
    return s

def status(s):
    data = b""
    while b"\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk: return 0
        data += chunk
    return int(data.split(b" ")[1])

def metric(name):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk: break
        data += chunk
    for line in data.decode().splitlines():
        if line.startswith(name + " "): return line.split()[1]
    return "?"

def jwts(n, label, bound=0.5):
    ok = True
    for i in range(n):
        t = time.monotonic(); s = send("/jwt", JWT); st = status(s); dt = time.monotonic() - t
        s.close()
        good = st == 200 and dt <= bound
        ok &= good
        print(f"  {label} /jwt {i + 1:2d}: {st} in {dt * 1000:7.1f} ms{'' if good else '  <- FAIL'}")
    return ok

ok = True
t0 = time.monotonic()
slow = send("/ssr", SSR)
time.sleep(0.05)  # the /ssr reaches the worker; the /jwt calls go behind it
if scenario == "a":
    print("A. a 3 s /ssr on the only worker, ten /jwt beside it:")
    ok &= jwts(10, "beside")
    st = status(slow)
    print(f"  the 3 s /ssr: {st} after {(time.monotonic() - t0):.2f} s")
    ok &= st == 200
else:
    print("B. a 10 s /ssr with KNIT_STUCK_MS=500, three /jwt beside it, three after:")
    ok &= jwts(3, "beside")
    st = status(slow)
    print(f"  the stuck /ssr: {st} after {(time.monotonic() - t0):.2f} s")
    ok &= st == 504
    ok &= jwts(3, "after ")
print(f"  lent workers started {metric('knit_pool_lent_workers_started_total')}, retired "
      f"{metric('knit_pool_lent_workers_retired_total')}, alive {metric('knit_pool_lent_workers')}")
print("  " + ("ok" if ok else "FAILED"))
sys.exit(0 if ok else 1)
PY
}

rc=0
start_server KNIT_SSR_COST_US=3000000
client a || rc=1
stop_server
start_server KNIT_SSR_COST_US=10000000 KNIT_STUCK_MS=500 KNIT_STOP_TIMEOUT_MS=300
client b || rc=1
stop_server
rm -f /tmp/lend-a-worker.$$.out
exit $rc

#!/usr/bin/env bash
# profile_host_path.sh: instructions per request on knit-server's host (event-loop) thread
# and on its worker, KNIT_MODE=pooled against KNIT_MODE=asio at one worker, under the mixed
# closed-loop load (/ping, /ssr, /jwt at once). Counts, not time: callgrind counts the same
# instructions however loaded the machine is (docs/host-path.md: method and results).
#
# usage: bench/profile_host_path.sh [--build DIR] [--out DIR] [--modes "pooled asio"]
#                                   [--seconds N] [--warmup N] [--conns N] [--perf]
#                                   [--no-callgrind] [--mix mixed|heavy] [--server PATH]
#                                   [--paired N]
#   --build    the build tree holding bin/knit-server and bin/knit-load (default build)
#   --out      where the callgrind files, stats and tables go (default a fresh /tmp dir;
#              relative paths, here and in --server, are from the repository root)
#   --modes    the KNIT_MODE values to count (default "pooled asio")
#   --seconds  the counted load window (default 20); --warmup the load before it (default 5)
#   --conns    connections per route (default 100, as the mixed load of the benchmark)
#   --perf     also run each mode without valgrind under `perf stat`, per thread: syscalls by
#              tracepoint, context switches and wake-ups (counts), task-clock (time, so noisy)
#   --no-callgrind  only the perf stat runs (with --perf)
#   --mix      mixed: /ping, /ssr and /jwt at once (default); heavy: /ssr and /jwt only, so
#              that every request takes the hand-off (per heavy call, whatever the mix)
#   --paired   then N paired throughput runs, pooled then asio, without valgrind (time: noisy)
#   --server   the knit-server binary (default DIR/bin/knit-server), e.g. a copy of an older one
# Environment: KNIT_COST_PROFILE (default bun), any other KNIT_* passes through to the server.
#
# For each mode: the server starts under callgrind with instrumentation off (--instr-atstart=no,
# one file per thread), a warm-up load runs, the server's knit-stats are read (SIGUSR1),
# instrumentation is switched on (callgrind_control -i on), the counted load runs, it is
# switched off, knit-stats are read again, and the server is stopped (SIGTERM), which writes
# the files. Requests = the knit-stats delta (every route). Thread 1 is the host; thread 2
# the worker (knit-worker-0, or the asio thread_pool's thread).
# Layout: the server (valgrind runs one guest thread at a time) on CPU 0, knit-load on CPU 1.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build out="" modes="pooled asio" window=20 warmup=5 conns=100
perf=0 callgrind=1 mix=mixed server_bin="" paired=0
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    --seconds) window=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --conns) conns=$2; shift 2 ;;
    --perf) perf=1; shift ;;
    --no-callgrind) callgrind=0; shift ;;
    --mix) mix=$2; shift 2 ;;
    --server) server_bin=$2; shift 2 ;;
    --paired) paired=$2; shift 2 ;;
    -h | --help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "profile_host_path.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
[ -n "$server_bin" ] || server_bin=$build/bin/knit-server
case $mix in mixed | heavy) ;; *) echo "profile_host_path.sh: --mix mixed|heavy" >&2; exit 2 ;; esac
load_bin=$build/bin/knit-load
for b in "$server_bin" "$load_bin"; do
  [ -x "$b" ] || { echo "profile_host_path.sh: $b not built (knit-server knit-load)" >&2; exit 2; }
done
tools=(python3)
[ "$callgrind" = 1 ] && tools+=(valgrind callgrind_control callgrind_annotate)
[ "$perf" = 1 ] && tools+=(perf)
for t in "${tools[@]}"; do
  command -v $t >/dev/null || { echo "profile_host_path.sh: $t is not installed" >&2; exit 2; }
done
[ -n "$out" ] || out=$(mktemp -d /tmp/host-path.XXXXXX)
mkdir -p "$out"
ncpu=$(nproc)
srv_cpu=0 gen_cpu=$((ncpu > 1 ? 1 : 0))
profile=${KNIT_COST_PROFILE:-bun}

cat >"$out/ssr.json" <<'JSON'
{"name":"Ari","plan":"pro","bio":"Building on Knitting","projects":17}
JSON
cat >"$out/jwt.json" <<'JSON'
{"user":{"id":"u_42","email":"ari@example.com","role":"admin"},"ttlSec":900}
JSON

# What perf counts per thread: time on CPU, switches and wake-ups, and the syscalls of the
# two paths (socket I/O, the event loop, the eventfd and the futex of each hand-off).
perf_events=task-clock,context-switches,sched:sched_switch,sched:sched_wakeup
perf_events+=,raw_syscalls:sys_enter
for sc in recvfrom sendmsg epoll_wait epoll_ctl read write futex clock_gettime; do
  perf_events+=,syscalls:sys_enter_$sc
done

server_pid=""
cleanup() { [ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null || true; }
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_server LOG MODE [command prefix...]: sets server_pid and port.
start_server() {
  local log=$1 mode=$2
  shift 2
  port=$(free_port)
  env PORT="$port" HOST=127.0.0.1 JWT_SECRET=profile KNIT_MODE="$mode" KNIT_THREADS=1 \
    KNIT_COST_PROFILE="$profile" taskset -c $srv_cpu "$@" "$server_bin" >"$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 600); do
    grep -q '^listening on' "$log" 2>/dev/null && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "profile_host_path.sh: the server did not start:" >&2
  cat "$log" >&2
  exit 1
}

# requests LOG FILE: total requests answered so far (every route), from one SIGUSR1; FILE
# gets the per-route counts (knit-stats "requests").
requests() {
  local log=$1 file=$2 before
  before=$(grep -c '^knit-stats' "$log" || true)
  kill -USR1 "$server_pid"
  for _ in $(seq 1 300); do
    [ "$(grep -c '^knit-stats' "$log" || true)" -gt "$before" ] && break
    sleep 0.1
  done
  grep '^knit-stats' "$log" | tail -1 | sed 's/^knit-stats //' |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["requests"]
json.dump(r, open(sys.argv[1], "w")); print(sum(r.values()))' "$file"
}

load() {  # load SECONDS JSON
  local routes=(--route "ssr:POST:/ssr:$conns:0:$out/ssr.json"
                --route "jwt:POST:/jwt:$conns:0:$out/jwt.json")
  [ "$mix" = mixed ] && routes+=(--route "ping:GET:/ping:$conns")
  taskset -c $gen_cpu "$load_bin" --port "$port" --duration "$1" --json "$2" "${routes[@]}" \
    >/dev/null
}

stop_server() {
  kill -TERM "$server_pid"
  wait "$server_pid" || true
  server_pid=""
}

for mode in $modes; do
  dir=$out/$mode
  rm -rf "$dir"
  mkdir -p "$dir"
  if [ "$callgrind" = 1 ]; then
    echo "== $mode: callgrind ($mix load; warm-up ${warmup}s, counted ${window}s," \
      "$conns connections per route)"
    start_server "$dir/server.log" "$mode" valgrind --tool=callgrind --separate-threads=yes \
      --instr-atstart=no --callgrind-out-file="$dir/callgrind.out"
    load "$warmup" "$dir/warmup.json"
    r0=$(requests "$dir/server.log" "$dir/requests-before.json")
    # vgdb names its pipes after $HOST (and $LOGNAME): the same values as the server's.
    HOST=127.0.0.1 callgrind_control -i on "$server_pid" >/dev/null
    load "$window" "$dir/load.json"
    HOST=127.0.0.1 callgrind_control -i off "$server_pid" >/dev/null
    r1=$(requests "$dir/server.log" "$dir/requests-after.json")
    stop_server
    echo $((r1 - r0)) >"$dir/requests"
    for f in "$dir"/callgrind.out-*; do
      callgrind_annotate --threshold=100 --inclusive=no "$f" >"$f.self.txt"
      callgrind_annotate --threshold=100 --inclusive=yes "$f" >"$f.incl.txt"
    done
    echo "   requests counted: $((r1 - r0))"
  fi

  if [ "$perf" = 1 ]; then
    echo "== $mode: perf stat, per thread (software events and syscall tracepoints)"
    start_server "$dir/perf-server.log" "$mode"
    load "$warmup" "$dir/perf-warmup.json"
    p0=$(requests "$dir/perf-server.log" "$dir/perf-requests-before.json")
    perf stat --per-thread -x, -e "$perf_events" -p "$server_pid" -o "$dir/perf-stat.csv" \
      -- sleep "$window" &
    perf_pid=$!
    load "$window" "$dir/perf-load.json"
    wait "$perf_pid" || true
    p1=$(requests "$dir/perf-server.log" "$dir/perf-requests-after.json")
    stop_server
    echo $((p1 - p0)) >"$dir/perf-requests"
  fi
done

# The tables: per thread, instructions (Ir) per request, and the host's functions side by
# side (self cost, and inclusive cost).
[ "$callgrind" = 1 ] && python3 - "$out" $modes <<'PY'
import glob, json, os, re, sys
out, modes = sys.argv[1], sys.argv[2:]
line = re.compile(r'^\s*([0-9,]+)\s+(?:\([ 0-9.]+%\)\s+)?(\S.*?)(?:\s+\[.*\])?\s*$')

def table(path):
    rows, total = {}, 0
    for text in open(path):
        if 'PROGRAM TOTALS' in text:
            first = text.split()[0].replace(',', '')
            total = int(first) if first.isdigit() else 0
            continue
        m = line.match(text)
        if not m or ':' not in m.group(2):
            continue
        name = m.group(2).split(':', 1)[1]
        rows[name] = rows.get(name, 0) + int(m.group(1).replace(',', ''))
    return total, rows

data = {}
for mode in modes:
    d = os.path.join(out, mode)
    n = int(open(os.path.join(d, 'requests')).read())
    threads = {}
    for f in sorted(glob.glob(os.path.join(d, 'callgrind.out-*[0-9]'))):
        tid = int(f.rsplit('-', 1)[1])
        threads[tid] = (table(f + '.self.txt'), table(f + '.incl.txt'))
    data[mode] = (n, threads)

print('\n## Ir per request, by thread (requests = knit-stats delta over the counted window)\n')
print('| mode | requests | of which /ssr + /jwt | ' +
      ' | '.join(f'thread {t}' for t in (1, 2, 3)) + ' |')
print('|---|---|---|---|---|---|')
for mode, (n, threads) in data.items():
    d = os.path.join(out, mode)
    before = json.load(open(os.path.join(d, 'requests-before.json')))
    after = json.load(open(os.path.join(d, 'requests-after.json')))
    heavy = sum(after[r] - before[r] for r in ('ssr', 'jwt'))
    cells = [f'{threads[t][0][0] / n:,.0f}' if t in threads else '' for t in (1, 2, 3)]
    print(f'| {mode} | {n} | {heavy} | ' + ' | '.join(cells) + ' |')

def side_by_side(tid, which, top):
    names = set()
    for mode, (n, threads) in data.items():
        if tid in threads:
            rows = threads[tid][which][1]
            names |= set(sorted(rows, key=rows.get, reverse=True)[:top])
    def per(mode, name):
        n, threads = data[mode]
        return threads.get(tid, ((0, {}), (0, {})))[which][1].get(name, 0) / n
    key = lambda name: max(per(m, name) for m in data)
    label = 'self' if which == 0 else 'inclusive'
    print(f'\n## thread {tid}: top functions, {label} Ir per request\n')
    print('| function | ' + ' | '.join(data) + ' |')
    print('|---|' + '---|' * len(data))
    for name in sorted(names, key=key, reverse=True):
        short = name if len(name) <= 110 else name[:107] + '...'
        short = short.replace('|', '\\|')
        print(f'| `{short}` | ' + ' | '.join(f'{per(m, name):,.1f}' for m in data) + ' |')

side_by_side(1, 0, 40)
side_by_side(1, 1, 60)
side_by_side(2, 0, 15)
PY

if [ "$perf" = 1 ]; then
  python3 - "$out" $modes <<'PY'
import collections, os, sys
out, modes = sys.argv[1], sys.argv[2:]
print('\n## perf stat, per request, by thread (counts; task-clock in ns: time, so noisy)\n')
for mode in modes:
    d = os.path.join(out, mode)
    n = int(open(os.path.join(d, 'perf-requests')).read())
    per = collections.defaultdict(dict)
    events = []
    for text in open(os.path.join(d, 'perf-stat.csv')):
        f = text.strip().split(',')
        if len(f) < 4 or text.startswith('#'):
            continue
        thread, value, event = f[0], f[1], f[3]
        try:
            v = float(value)
        except ValueError:
            continue
        if event == 'task-clock':
            v *= 1e6  # msec -> ns
        per[thread][event] = per[thread].get(event, 0) + v
        if event not in events:
            events.append(event)
    threads = sorted(per, key=lambda t: -per[t].get('task-clock', 0))
    print(f'{mode}: {n} requests')
    print('| event | ' + ' | '.join(threads) + ' |')
    print('|---|' + '---|' * len(threads))
    for e in events:
        short = e.replace('syscalls:sys_enter_', '').replace('raw_syscalls:sys_enter', 'syscalls')
        print(f'| {short} | ' + ' | '.join(f'{per[t].get(e, 0) / n:.3f}' for t in threads) + ' |')
    print()
PY
fi
# --paired N: throughput, N alternations of pooled and asio (time, so noisy): each run a
# fresh server (no valgrind), a warm-up, then a `--seconds` closed-loop window; the total and
# heavy requests/s of each run and the pooled/asio ratio of each pair.
if [ "$paired" -gt 0 ]; then
  echo "== paired throughput: $paired x (pooled, asio), ${window}s windows ($mix load)"
  for i in $(seq 1 "$paired"); do
    for mode in pooled asio; do
      uptime >"$out/paired-$i-$mode.uptime"
      start_server "$out/paired-$i-$mode.log" "$mode"
      load "$warmup" "$out/paired-$i-$mode-warmup.json"
      load "$window" "$out/paired-$i-$mode.json"
      stop_server
    done
  done
  python3 - "$out" "$paired" <<'PY'
import json, os, sys
out, n = sys.argv[1], int(sys.argv[2])
def rates(path):
    r = json.load(open(path))['routes']
    total = sum(v['summary']['requestsPerSec'] for v in r.values())
    heavy = sum(v['summary']['requestsPerSec'] for k, v in r.items() if k != 'ping')
    return total, heavy, json.load(open(path)).get('gen_cpu_s', 0)
print('\n## paired throughput (noisy: time on a shared machine)\n')
print('| pair | load average | pooled req/s | asio req/s | ratio | pooled heavy/s | asio heavy/s |')
print('|---|---|---|---|---|---|---|')
ratios = []
for i in range(1, n + 1):
    p, a = (rates(os.path.join(out, f'paired-{i}-{m}.json')) for m in ('pooled', 'asio'))
    load = open(os.path.join(out, f'paired-{i}-pooled.uptime')).read().split('average:')[1].strip()
    ratios.append(p[0] / a[0])
    print(f'| {i} | {load} | {p[0]:,.0f} | {a[0]:,.0f} | {p[0] / a[0]:.2f} '
          f'| {p[1]:,.0f} | {a[1]:,.0f} |')
ratios.sort()
print(f'\nmedian ratio {ratios[len(ratios) // 2]:.2f} (min {ratios[0]:.2f}, max {ratios[-1]:.2f})')
PY
fi
echo "files: $out"

#!/usr/bin/env bash
# rate.sh TAG ENV... : knit-server on CPU 0 (bun, pooled, 1 thread), knit-load CPU 1 at 1500/route, perf stat on CPU 0
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
cd "$HERE/../../../../.."
TAG=$1; shift
PORT=$((20000 + RANDOM % 10000))
env "$@" PORT=$PORT KNIT_MODE=pooled KNIT_THREADS=1 KNIT_COST_PROFILE=bun taskset -c 0 build/bin/knit-server >/tmp/srv-$TAG.log 2>&1 &
SP=$!
for i in $(seq 100); do grep -q listening /tmp/srv-$TAG.log && break; sleep 0.1; done
DUR=${DUR:-10}
taskset -c 1 build/bin/knit-load --port $PORT --duration $((DUR+2)) --route ping:GET:/ping:20:1500 --route ssr:POST:/ssr:20:1500:"$HERE"/ssr.json --route jwt:POST:/jwt:20:1500:"$HERE"/jwt.json >/tmp/load-$TAG.txt 2>&1 &
LP=$!
sleep 1
cpu() { local t=0; for p in $SP $(pgrep -P $SP); do t=$((t + $(awk '{print $14+$15}' /proc/$p/stat))); done; echo $t; }
C0=$(cpu)
perf stat -a -C 0 -e context-switches,raw_syscalls:sys_enter,page-faults,cpu-migrations -x, -o /tmp/perf-$TAG.txt sleep $DUR
C1=$(cpu)
echo "$C0 $C1" > /tmp/cpu-$TAG.txt
wait $LP
kill -TERM $SP; wait $SP
python3 - /tmp/perf-$TAG.txt $DUR $TAG $(cat /tmp/cpu-$TAG.txt) <<'PY'
import sys
rows={}
for l in open(sys.argv[1]):
    if l.startswith('#') or not l.strip(): continue
    p=l.split(',')
    rows[p[2]]=float(p[0]) if p[0] not in ('<not counted>','<not supported>') else float('nan')
req=4500*float(sys.argv[2])
ticks=int(sys.argv[5])-int(sys.argv[4])
print(f"{sys.argv[3]:14s} cpu_us/req {ticks*1e4/req:7.1f}  cs/req {rows['context-switches']/req:5.2f}  sys/req {rows['raw_syscalls:sys_enter']/req:5.2f}  pf/req {rows['page-faults']/req:6.3f}")
PY
